/**
 * PostgreSQL advisory lock keys and the names LockLens shows them by. pg_locks spells every advisory key as two oids
 * (unsigned 32-bit) and a flag: `objsubid = 1` for a bigint key (`classid` its high 32 bits, `objid` its low 32 bits),
 * `objsubid = 2` for a pair of int4 keys (`classid` the first, `objid` the second, each as the oid of the same bits).
 * The two forms are different locks even when their bits agree: `pg_advisory_lock(1, 2)` does not exclude
 * `pg_advisory_lock(4294967298)`.
 *
 * Names: a bigint key is its signed decimal (`-1`, `42`), as passed to `pg_advisory_lock(bigint)`; a pair is
 * `<k1>:<k2>`, each signed (`1:2`, `-5:7`), as passed to `pg_advisory_lock(int, int)`. A bigint's other name is its
 * halves as pg_locks shows them, `(classid, objid)`; a pair gets none: the bigint with the same bits is another lock,
 * and naming it would invite the mistake.
 */
import { LockLensError } from '../errors';

export type AdvisoryKey = { readonly kind: 'bigint'; readonly key: bigint } | { readonly kind: 'pair'; readonly k1: number; readonly k2: number };

/** The key of a pg_locks row (`classid`, `objid` as their unsigned values; `objsubid` 1 or 2). */
export function keyOfRow(classid: bigint, objid: bigint, objsubid: number): AdvisoryKey {
  if (objsubid === 2) return { kind: 'pair', k1: Number(BigInt.asIntN(32, classid)), k2: Number(BigInt.asIntN(32, objid)) };
  return { kind: 'bigint', key: BigInt.asIntN(64, (classid << 32n) | objid) };
}

/**
 * `nameOfKey` and `altNameOfKey` of a pg_locks row's key, from `classid` and `objid` as unsigned decimal text (as the
 * listing reads them), without BigInts where a double holds the key exactly: a listing names every key it reads.
 */
export function namesOfRow(classid: string, objid: string, objsubid: number): { name: string; altName?: string } {
  // `| 0` reads an oid's 32 bits as the signed int4 it was given as.
  if (objsubid === 2) return { name: `${Number(classid) | 0}:${Number(objid) | 0}` };
  const high = Number(classid);
  // Below 2^21 the high half keeps the key positive and under 2^53.
  const name = high < 0x200000 ? String(high * 0x100000000 + Number(objid)) : nameOfKey(keyOfRow(BigInt(classid), BigInt(objid), objsubid));
  return { name, altName: `(${classid}, ${objid})` };
}

/** `classid`, `objid`, `objsubid` as pg_locks holds them. */
export function rowOfKey(key: AdvisoryKey): { classid: bigint; objid: bigint; objsubid: number } {
  if (key.kind === 'pair') return { classid: BigInt.asUintN(32, BigInt(key.k1)), objid: BigInt.asUintN(32, BigInt(key.k2)), objsubid: 2 };
  const bits = BigInt.asUintN(64, key.key);
  return { classid: bits >> 32n, objid: bits & 0xffffffffn, objsubid: 1 };
}

export function nameOfKey(key: AdvisoryKey): string {
  return key.kind === 'pair' ? `${key.k1}:${key.k2}` : key.key.toString();
}

export function altNameOfKey(key: AdvisoryKey): string | undefined {
  if (key.kind === 'pair') return undefined;
  const { classid, objid } = rowOfKey(key);
  return `(${classid}, ${objid})`;
}

const INT64 = /^-?\d{1,19}$/;
const PAIR = /^(-?\d{1,10}):(-?\d{1,10})$/;

function inInt32(n: number): boolean {
  return Number.isSafeInteger(n) && n >= -0x80000000 && n <= 0x7fffffff;
}

/** The key a lock name stands for; INVALID_ARGUMENT, saying the two forms, for anything else. */
export function parseAdvisoryName(text: string): AdvisoryKey {
  const bad = (why: string) =>
    new LockLensError('INVALID_ARGUMENT', `'${text}' is not a PostgreSQL advisory lock key: ${why} (write a bigint such as 42 or -7, or an int pair such as 1:2)`);
  const pair = PAIR.exec(text);
  if (pair) {
    const [k1, k2] = [Number(pair[1]), Number(pair[2])];
    if (!inInt32(k1) || !inInt32(k2)) throw bad('each half of a pair is a 32-bit integer');
    return { kind: 'pair', k1, k2 };
  }
  if (INT64.test(text)) {
    const key = BigInt(text);
    if (BigInt.asIntN(64, key) !== key) throw bad('it is outside the bigint range');
    return { kind: 'bigint', key };
  }
  throw bad('it is neither a number nor two numbers joined by a colon');
}

/** The SQL arguments of pg_advisory_*(…) for a key: `$n::bigint` or `$n::int, $m::int`, and their values. */
export function keyArguments(key: AdvisoryKey, first = 1): { sql: string; params: string[] } {
  if (key.kind === 'pair') return { sql: `$${first}::int4, $${first + 1}::int4`, params: [String(key.k1), String(key.k2)] };
  return { sql: `$${first}::int8`, params: [key.key.toString()] };
}
