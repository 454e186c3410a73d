/**
 * Keys and values are bytes in every store (an etcd key, a Redis key or field, a znode path's bytes). LockLens keeps
 * them as Buffers end to end: a key that is not UTF-8 is never decoded lossily (two different keys would merge), only
 * escaped for display.
 */

import { isUtf8 as validUtf8 } from 'node:buffer';
import { LockLensError } from './errors';

/**
 * A lossless string identity for a key, for use as a Map key: one char per byte. A Buffer (every member's key) is read
 * as it is: a view made of it at each call cost as much as the reading (the diagnosis makes thousands a second).
 */
export function keyId(bytes: Uint8Array): string {
  return bufferOf(bytes).toString('latin1');
}

/** Checked without decoding (Node's validator, which rejects what a fatal TextDecoder does: overlongs, surrogates). */
export function isUtf8(bytes: Uint8Array): boolean {
  return validUtf8(bytes);
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Text for people: the UTF-8 string when the bytes are UTF-8, otherwise valid runs decoded and every invalid byte
 * written `\xNN`. Backslashes are escaped too in that case, so the escaped form cannot collide with a real key.
 */
export function displayKey(bytes: Uint8Array): string {
  if (validUtf8(bytes)) return bufferOf(bytes).toString('utf8');
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const len = utf8SequenceLength(bytes, i);
    if (len === 0) {
      out += '\\x' + bytes[i].toString(16).padStart(2, '0');
      i++;
    } else {
      const s = Buffer.from(bytes.subarray(i, i + len)).toString('utf8');
      out += s === '\\' ? '\\\\' : s;
      i += len;
    }
  }
  return out;
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 if the byte there does not start one. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  const len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len === 0 || i + len > b.length) return 0;
  for (let k = 1; k < len; k++) if ((b[i + k] & 0xc0) !== 0x80) return 0;
  return isUtf8(b.subarray(i, i + len)) ? len : 0; // rejects overlongs and surrogates
}

export function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  // Byte by byte: copying the key's head to compare it (Buffer.from) was half of what a Redis TTL sweep cost.
  if (key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** Whether `key` is under any of `prefixes`: a loop rather than a callback made per key (see byName in lockState.ts). */
export function hasAnyPrefix(key: Uint8Array, prefixes: readonly Uint8Array[]): boolean {
  for (const p of prefixes) if (hasPrefix(key, p)) return true;
  return false;
}

/** Lease IDs travel as decimal int64 strings in the gRPC API, as lowercase hex in Go keys and etcdctl output. */
export function leaseHex(decimal: string | number | bigint): string {
  const id = BigInt(decimal);
  return id === 0n ? '' : id.toString(16);
}

export function leaseDecimal(hex: string): string {
  return BigInt('0x' + hex).toString(10);
}

const HEX_LEASE = /^(?:0x)?([0-9a-f]{1,16})$/i;
const MAX_LEASE_ID = 0x7fffffffffffffffn; // lease IDs are positive int64s

/** Parses a lease ID given by a person: hex as etcdctl prints it (with or without 0x). */
export function parseLeaseHex(text: string): string | undefined {
  const m = HEX_LEASE.exec(text.trim());
  if (!m) return undefined;
  const id = BigInt('0x' + m[1]);
  return id === 0n || id > MAX_LEASE_ID ? undefined : id.toString(16);
}

/** Sorted, without duplicates, and without prefixes that a shorter one already covers (so no key is watched twice). */
export function normalizePrefixes(prefixes: readonly Uint8Array[]): Buffer[] {
  const sorted = prefixes.map((p) => Buffer.from(p)).sort(Buffer.compare);
  const kept: Buffer[] = [];
  for (const p of sorted) if (!kept.some((k) => hasPrefix(p, k))) kept.push(p);
  if (kept.length === 0) throw new LockLensError('INVALID_ARGUMENT', 'no prefix to watch');
  return kept;
}
