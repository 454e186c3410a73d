/**
 * How people write the recorded history's spans: an age (`--since 6h`, `history.maxAge: 30d`) and a size
 * (`history.maxBytes: 1GiB`).
 */
import { LockLensError } from '../errors';

const AGE_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000, d: 86_400_000, w: 7 * 86_400_000 };
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4 };

/** `90s`, `30m`, `6h`, `30d`, `2w`, `1h30m`: in ms. `what` names the setting in the message. */
export function parseAge(text: string, what: string): number {
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.trim()) {
    throw new LockLensError('INVALID_ARGUMENT', `${what}: '${text}' is not an age (e.g. 90s, 30m, 6h, 30d, 1h30m)`);
  }
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * AGE_UNITS[unit], 0);
}

/** `1GiB`, `500MB`, `200 MiB`, `1048576`: in bytes. */
export function parseBytes(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m ? BYTE_UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new LockLensError('INVALID_ARGUMENT', `${what}: '${text}' is not a size (e.g. 1GiB, 500MB, 200MiB)`);
  return Math.round(Number(m[1]) * unit);
}

/** `--since`: an age back from `now`, or a moment (an ISO 8601 date and time). Epoch ms. */
export function parseSince(text: string, now: number): number {
  if (/^\d{4}-\d\d-\d\d/.test(text.trim())) {
    const at = Date.parse(text.trim());
    if (Number.isNaN(at)) throw new LockLensError('INVALID_ARGUMENT', `--since: '${text}' is not a date and time (e.g. 2025-03-01T08:00:00Z)`);
    return at;
  }
  return now - parseAge(text, '--since');
}
