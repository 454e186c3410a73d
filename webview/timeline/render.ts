import { formatString, type TimelineStrings } from '../../src/protocol/timeline';
import type { TimelineRow } from '../../src/shared/timelineData';
import { cross, endLabel, endMark } from './endMarks';
import { isLongHold, ttlLeft, type Layout, type LockLine } from './model';
import type { Theme } from './theme';

/**
 * Draws the visible lines on one canvas the size of the viewport: a time axis on top, then per line a lock header or
 * a lease's bar. Only the lines in view are drawn, so the cost of a frame does not grow with the number of leases.
 * Text from etcd reaches the screen only through `fillText`.
 */

export const AXIS_H = 24;
export const LINE_H = 22;
/** The axis shows the window up to now, and a fifth of it ahead, where the remaining TTLs run out. */
export const FUTURE = 0.2;

const THICK = 12;
const THIN = 5;
const TICK_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

export interface Frame {
  readonly now: number;
  readonly windowMs: number;
  readonly layout: Layout;
  readonly scrollTop: number;
  readonly selected?: string;
  readonly hover?: number;
  readonly focused: boolean;
  readonly longHoldMs: number;
  readonly strings: TimelineStrings;
  readonly theme: Theme;
  /** Shown in the middle when there is no line. */
  readonly emptyText: string;
}

export function labelWidth(width: number): number {
  return Math.round(Math.min(400, Math.max(220, width * 0.34)));
}

/** The line index under a y coordinate of the canvas, or -1 (the axis). */
export function lineAt(y: number, scrollTop: number): number {
  if (y < AXIS_H) return -1;
  return Math.floor((y - AXIS_H + scrollTop) / LINE_H);
}

export class Renderer {
  private readonly ctx: CanvasRenderingContext2D;
  private width = 0;
  private height = 0;
  private readonly fitted = new Map<string, string>();

  constructor(private readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('no 2d canvas');
    this.ctx = ctx;
  }

  /** CSS size; the backing store follows the device pixel ratio so text stays sharp. */
  resize(width: number, height: number): void {
    const dpr = window.devicePixelRatio || 1;
    this.width = width;
    this.height = height;
    this.canvas.width = Math.max(1, Math.round(width * dpr));
    this.canvas.height = Math.max(1, Math.round(height * dpr));
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  /** Text fitted into a width, with an ellipsis; remembered, since the same labels are drawn every frame. */
  private fit(text: string, maxWidth: number): string {
    const key = `${this.ctx.font}\u0000${maxWidth}\u0000${text}`;
    let out = this.fitted.get(key);
    if (out === undefined) {
      out = text;
      if (this.ctx.measureText(text).width > maxWidth) {
        let lo = 0;
        let hi = text.length;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (this.ctx.measureText(text.slice(0, mid) + '…').width <= maxWidth) lo = mid;
          else hi = mid - 1;
        }
        out = text.slice(0, lo) + '…';
      }
      if (this.fitted.size > 5000) this.fitted.clear();
      this.fitted.set(key, out);
    }
    return out;
  }

  /** The theme changed: fonts may have, so fitted texts are stale. */
  themeChanged(): void {
    this.fitted.clear();
  }

  draw(f: Frame): void {
    const { ctx, width, height } = this;
    const t = f.theme;
    const labelW = labelWidth(width);
    const plotX = labelW;
    const plotW = Math.max(10, width - labelW - 8);
    const t0 = f.now - f.windowMs;
    const span = f.windowMs * (1 + FUTURE);
    const x = (time: number) => plotX + ((time - t0) / span) * plotW;
    const nowX = x(f.now);

    ctx.fillStyle = t.background;
    ctx.fillRect(0, 0, width, height);
    ctx.textBaseline = 'middle';

    // Lines in view.
    const first = Math.max(0, Math.floor(f.scrollTop / LINE_H));
    const last = Math.min(f.layout.lines.length - 1, Math.ceil((f.scrollTop + height - AXIS_H) / LINE_H));
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, width, height - AXIS_H);
    ctx.clip();
    this.grid(f, x, t0, span, plotX, plotW);
    for (let i = first; i <= last; i++) {
      const line = f.layout.lines[i];
      const y = AXIS_H + i * LINE_H - f.scrollTop;
      if (line.type === 'lock') this.header(f, line, y, labelW);
      else this.row(f, line.row, y, i, labelW, plotX, plotW, x, nowX);
    }
    ctx.restore();

    this.axis(f, x, t0, span, plotX, plotW, nowX);
    if (f.layout.lines.length === 0) {
      ctx.fillStyle = t.muted;
      ctx.font = t.font;
      ctx.textAlign = 'center';
      ctx.fillText(this.fit(f.emptyText, width - 40), width / 2, AXIS_H + 40);
      ctx.textAlign = 'left';
    }
  }

  private grid(f: Frame, x: (t: number) => number, t0: number, span: number, plotX: number, plotW: number): void {
    const { ctx, height } = this;
    ctx.strokeStyle = f.theme.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tick of ticks(f.now, t0, span, plotW)) {
      const px = Math.round(x(tick)) + 0.5;
      ctx.moveTo(px, AXIS_H);
      ctx.lineTo(px, height);
    }
    ctx.moveTo(plotX - 0.5, 0);
    ctx.lineTo(plotX - 0.5, height);
    ctx.stroke();
  }

  private axis(f: Frame, x: (t: number) => number, t0: number, span: number, plotX: number, plotW: number, nowX: number): void {
    const { ctx, width, height } = this;
    const t = f.theme;
    ctx.fillStyle = t.background;
    ctx.fillRect(0, 0, width, AXIS_H);
    ctx.strokeStyle = t.grid;
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(width, AXIS_H - 0.5);
    ctx.stroke();
    ctx.font = t.font;
    ctx.fillStyle = t.muted;
    ctx.textAlign = 'center';
    for (const tick of ticks(f.now, t0, span, plotW)) {
      const px = x(tick);
      if (Math.abs(px - nowX) < 30 || px < plotX + 16 || px > plotX + plotW - 16) continue;
      ctx.fillText(relative(tick - f.now, f.strings), px, AXIS_H / 2);
    }
    ctx.fillStyle = t.focus;
    ctx.fillText(f.strings.now, nowX, AXIS_H / 2);
    ctx.textAlign = 'left';
    // The "now" line, over everything.
    ctx.strokeStyle = t.focus;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(Math.round(nowX) + 0.5, AXIS_H - 4);
    ctx.lineTo(Math.round(nowX) + 0.5, height);
    ctx.stroke();
  }

  private header(f: Frame, line: LockLine, y: number, labelW: number): void {
    const { ctx, width } = this;
    const t = f.theme;
    ctx.fillStyle = t.headerBackground;
    ctx.fillRect(0, y, width, LINE_H);
    const s = f.strings;
    const kind = { queue: s.lockQueue, election: s.lockElection, readwrite: s.lockReadWrite, single: s.lockSingle, semaphore: s.lockSemaphore }[line.kind];
    const right = [kind, formatString(s.liveCount, line.live), ...(f.layout.manyConnections ? [line.connection] : [])].join(' · ');
    ctx.font = t.font;
    const rightText = this.fit(right, Math.max(40, width - labelW));
    const rightW = ctx.measureText(rightText).width;
    ctx.fillStyle = t.muted;
    ctx.fillText(rightText, width - 8 - rightW, y + LINE_H / 2);
    ctx.font = t.boldFont;
    const tagW = line.deadlock ? ctx.measureText(s.deadlock).width + 12 : 0;
    const name = this.fit(line.lockName, width - rightW - 32 - tagW);
    ctx.fillStyle = t.foreground;
    ctx.fillText(name, 8, y + LINE_H / 2);
    if (!line.deadlock) return;
    ctx.fillStyle = t.error;
    ctx.fillText(s.deadlock, 8 + ctx.measureText(name).width + 12, y + LINE_H / 2);
  }

  private row(
    f: Frame,
    row: TimelineRow,
    y: number,
    index: number,
    labelW: number,
    plotX: number,
    plotW: number,
    x: (t: number) => number,
    nowX: number,
  ): void {
    const { ctx } = this;
    const t = f.theme;
    const s = f.strings;
    const mid = y + LINE_H / 2;
    const selected = row.id === f.selected;
    if (selected) {
      ctx.fillStyle = t.selection;
      ctx.fillRect(0, y, this.width, LINE_H);
      if (f.focused) {
        ctx.strokeStyle = t.focus;
        ctx.strokeRect(0.5, y + 0.5, this.width - 1, LINE_H - 1);
      }
    } else if (index === f.hover) {
      ctx.fillStyle = t.hover;
      ctx.fillRect(0, y, this.width, LINE_H);
    }

    const colour = roleColour(row.role, t);
    const ended = row.endedAt !== undefined;
    const left = ttlLeft(row, f.now);
    const stalled = !ended && (row.stalled || row.leaseState === 'expired');
    const longHold = isLongHold(row, f.now, f.longHoldMs);

    // Label column: role (in its colour), lease ID, TTL left with a small gauge.
    // A single key's header already says so: its one member is just the holder here.
    const roleText = row.position > 0 ? `${roleLabel(row.role, s)} #${row.position}` : row.role === 'single' ? s.holder : roleLabel(row.role, s);
    ctx.font = t.font;
    ctx.fillStyle = ended ? t.muted : colour;
    ctx.fillText(this.fit(roleText, 86), 16, mid);
    const ttlText = ended ? endLabel(row, s) : left === undefined ? (row.lease ? '…' : '—') : `${left < 10 ? left.toFixed(1) : Math.ceil(left)}s`;
    const gaugeW = 28;
    const ttlW = 44;
    ctx.fillStyle = stalled ? t.error : ended ? t.muted : t.foreground;
    const idX = 108;
    // An ended bar has no gauge: its end ("revoked or expired") takes the room it needs from the lease ID.
    const rightW = ended ? Math.min(labelW - idX - 64, ctx.measureText(ttlText).width + 4) : ttlW + gaugeW + 4;
    const ttlFitted = this.fit(ttlText, ended ? rightW : ttlW);
    ctx.fillText(ttlFitted, labelW - 8 - ctx.measureText(ttlFitted).width, mid);
    ctx.font = t.monoFont;
    ctx.fillStyle = ended ? t.muted : t.foreground;
    const idW = labelW - idX - rightW - 16;
    ctx.fillText(this.fit(row.lease || row.owner || lastSegment(row.key), idW), idX, mid);
    if (!ended && left !== undefined && row.grantedTtl) {
      const gx = labelW - 8 - ttlW - gaugeW - 4;
      ctx.fillStyle = t.grid;
      ctx.fillRect(gx, mid - 2, gaugeW, 4);
      ctx.fillStyle = stalled ? t.error : colour;
      ctx.fillRect(gx, mid - 2, gaugeW * Math.min(1, left / row.grantedTtl), 4);
    }

    // Plot: clip so bars that started before the window do not spill into the labels.
    ctx.save();
    ctx.beginPath();
    ctx.rect(plotX, y, plotW, LINE_H);
    ctx.clip();
    ctx.globalAlpha = ended ? 0.5 : 1;
    const end = row.endedAt ?? f.now;
    const start = row.firstSeenAt;
    const hold = row.heldSince;
    if (hold === undefined || hold > start) this.bar(x(start), x(hold ?? end), mid, THIN, colour, stalled ? t.error : undefined);
    if (hold !== undefined) this.bar(x(Math.max(hold, start)), x(end), mid, THICK, colour, stalled ? t.error : longHold ? t.warning : undefined);
    if (!row.firstSeenExact) {
      // Already there when LockLens first looked: the bar's real start is earlier.
      ctx.fillStyle = t.muted;
      ctx.fillText('‹', x(start) - 8, mid);
    }
    // Keepalives: where the TTL jumped back up.
    ctx.strokeStyle = t.foreground;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (const r of row.refreshes) {
      if (r < start || r > end) continue;
      const px = Math.round(x(r)) + 0.5;
      ctx.moveTo(px, mid - 7);
      ctx.lineTo(px, mid + 7);
    }
    ctx.stroke();
    // What is left of the TTL, ahead of now: where the lease runs out unless renewed.
    if (!ended && left !== undefined && left > 0) {
      const x1 = Math.min(x(f.now + left * 1000), plotX + plotW);
      const h = hold !== undefined ? THICK : THIN;
      ctx.globalAlpha = 0.3;
      ctx.fillStyle = stalled ? t.error : colour;
      ctx.fillRect(nowX, mid - h / 2, x1 - nowX, h);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = stalled ? t.error : colour;
      ctx.setLineDash([2, 2]);
      ctx.beginPath();
      ctx.moveTo(Math.round(x1) - 0.5, mid - 8);
      ctx.lineTo(Math.round(x1) - 0.5, mid + 8);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.globalAlpha = 1;
    if (ended) endMark(ctx, row, x(row.endedAt!), mid, t);
    else if (row.leaseState === 'expired') cross(ctx, nowX, mid, t.error);
    ctx.restore();

    // Trouble, said in words at the bar's end (colour alone is not enough).
    const trouble = ended ? undefined : row.leaseState === 'expired' ? s.expired : stalled ? s.stalled : longHold ? s.longHold : undefined;
    if (trouble) {
      ctx.font = t.font;
      ctx.fillStyle = stalled ? t.error : t.warning;
      const tw = ctx.measureText(trouble).width;
      // Just left of now, where the eye reads the current state.
      const tx = Math.max(plotX + 4, nowX - tw - 8);
      ctx.fillStyle = t.background;
      ctx.globalAlpha = 0.8;
      ctx.fillRect(tx - 2, mid - 8, tw + 4, 16);
      ctx.globalAlpha = 1;
      ctx.fillStyle = stalled ? t.error : t.warning;
      ctx.fillText(trouble, tx, mid);
    }
  }

  private bar(x0: number, x1: number, mid: number, h: number, colour: string, outline: string | undefined): void {
    const { ctx } = this;
    const w = Math.max(2, x1 - x0);
    ctx.fillStyle = colour;
    ctx.fillRect(x0, mid - h / 2, w, h);
    if (outline) {
      ctx.strokeStyle = outline;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 + 1, mid - h / 2 - 1, w - 2, h + 2);
      ctx.lineWidth = 1;
    }
  }
}

export function roleColour(role: TimelineRow['role'], t: Theme): string {
  switch (role) {
    case 'holder':
      return t.holder;
    case 'waiter':
      return t.waiter;
    case 'leader':
      return t.leader;
    case 'candidate':
      return t.candidate;
    case 'single':
      return t.single;
  }
}

export function roleLabel(role: TimelineRow['role'], s: TimelineStrings): string {
  return s[role];
}

/** Who the bar is, and its fencing token: `lease 1a2b · token 9` (etcd), `owner 5f3e…` (a Redis token lock). */
export function ownerParts(row: TimelineRow, s: TimelineStrings): string[] {
  const who = row.lease ? formatString(s.lease, row.lease) : row.owner ? formatString(s.owner, row.owner) : s.noLease;
  return row.token === null ? [who] : [who, formatString(s.token, row.token)];
}

function lastSegment(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1) || key;
}

/** Tick times: a round step that leaves room for labels, aligned to now. */
function ticks(now: number, t0: number, span: number, plotW: number): number[] {
  const stepS = TICK_STEPS_S.find((st) => (st * 1000 * plotW) / span >= 70) ?? TICK_STEPS_S[TICK_STEPS_S.length - 1];
  const step = stepS * 1000;
  const out: number[] = [];
  for (let k = Math.ceil((t0 - now) / step); now + k * step <= t0 + span; k++) if (k !== 0) out.push(now + k * step);
  return out;
}

/** −30s, −5m, +15s: a tick's distance from now. */
function relative(ms: number, s: TimelineStrings): string {
  const sign = ms < 0 ? '−' : '+';
  const secs = Math.round(Math.abs(ms) / 1000);
  const text =
    secs < 60
      ? formatString(s.seconds, secs)
      : secs < 3600
        ? secs % 60
          ? formatString(s.minutesSeconds, Math.floor(secs / 60), secs % 60)
          : formatString(s.minutes, secs / 60)
        : formatString(s.hours, Math.round((secs / 3600) * 10) / 10);
  return sign + text;
}
