/**
 * How the end of a bar shows: a mark at its end, one per end (see HoldEnd), told apart by shape as well as colour (a
 * bar let go, a cross ran out, a diamond was ended), and its reason in words for the bar's label and detail.
 */
import type { TimelineStrings } from '../../src/protocol/timeline';
import type { TimelineEnd, TimelineRow } from '../../src/shared/timelineData';
import type { Theme } from './theme';

export function endMark(ctx: CanvasRenderingContext2D, row: TimelineRow, px: number, mid: number, t: Theme): void {
  ctx.globalAlpha = 1;
  switch (row.end) {
    case 'expired':
      return cross(ctx, px, mid, t.warning);
    case 'revokedOrExpired':
      return cross(ctx, px, mid, t.error);
    case 'forceReleased':
      return diamond(ctx, px, mid, t.error, true);
    case 'ownerLost':
      return diamond(ctx, px, mid, t.warning, false);
  }
  ctx.strokeStyle = row.end === 'released' ? t.foreground : t.muted;
  ctx.lineWidth = 3;
  ctx.beginPath();
  ctx.moveTo(Math.round(px), mid - 8);
  ctx.lineTo(Math.round(px), mid + 8);
  ctx.stroke();
  ctx.lineWidth = 1;
}

function diamond(ctx: CanvasRenderingContext2D, px: number, mid: number, colour: string, filled: boolean): void {
  ctx.beginPath();
  ctx.moveTo(px, mid - 6);
  ctx.lineTo(px + 6, mid);
  ctx.lineTo(px, mid + 6);
  ctx.lineTo(px - 6, mid);
  ctx.closePath();
  ctx.fillStyle = ctx.strokeStyle = colour;
  ctx.lineWidth = 2;
  if (filled) ctx.fill();
  else ctx.stroke();
  ctx.lineWidth = 1;
}

export function cross(ctx: CanvasRenderingContext2D, px: number, mid: number, colour: string): void {
  ctx.strokeStyle = colour;
  ctx.lineWidth = 2.5;
  ctx.beginPath();
  ctx.moveTo(px - 5, mid - 5);
  ctx.lineTo(px + 5, mid + 5);
  ctx.moveTo(px + 5, mid - 5);
  ctx.lineTo(px - 5, mid + 5);
  ctx.stroke();
  ctx.lineWidth = 1;
}

export function endLabel(row: TimelineRow, s: TimelineStrings): string {
  return endText(row.end ?? 'unknown', s);
}

export function endText(end: TimelineEnd, s: TimelineStrings): string {
  const texts: Record<TimelineEnd, string> = {
    released: s.endedReleased,
    expired: s.endedExpired,
    forceReleased: s.endedForceReleased,
    ownerLost: s.endedOwnerLost,
    revokedOrExpired: s.endedRevoked,
    unknown: s.endedUnknown,
  };
  return texts[end];
}
