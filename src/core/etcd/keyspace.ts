import { call, type EtcdConnection } from './connect';
import { prefixRange } from './keyRange';
import { toKeyRecord, type KeyRecord, type RawKeyValue } from './records';

/** An etcd key range as the API takes it: the etcd keys (namespace included) from `key` up to `range_end`. */
export interface EtcdRange {
  readonly key: Buffer;
  readonly range_end?: Buffer;
}

export interface PrefixRead {
  readonly revision: number;
  readonly records: KeyRecord[];
}

const PAGE = 2000;

/**
 * Every key under `prefix` (inside the connection's namespace) at one revision, read in pages so that 100k keys or
 * 1.5 MB values never make one giant response. Pass `revision` to read several prefixes at the same revision.
 */
export function readPrefix(conn: EtcdConnection, prefix: Uint8Array, revision?: number): Promise<PrefixRead> {
  return readRange(conn, prefixRange(conn.toEtcd(prefix)), revision);
}

/** Every key of an etcd range (`range_end` absent: the one key), paged as `readPrefix`; keys without the namespace. */
export async function readRange(conn: EtcdConnection, range: EtcdRange, revision?: number): Promise<PrefixRead> {
  const nsLength = conn.namespace.length;
  const records: KeyRecord[] = [];
  let key = range.key;
  let atRevision = revision ?? 0;
  for (;;) {
    const res = await call(conn.client.kv.range({ key, range_end: range.range_end, limit: PAGE, revision: atRevision }));
    if (atRevision === 0) atRevision = Number(res.header.revision);
    for (const kv of res.kvs as RawKeyValue[]) records.push(toKeyRecord(kv, nsLength));
    if (!res.more || res.kvs.length === 0) break;
    key = Buffer.concat([res.kvs[res.kvs.length - 1].key, Buffer.from([0])]);
  }
  return { revision: atRevision, records };
}

/** Reads several prefixes at one revision: the first read fixes it. */
export async function readPrefixes(conn: EtcdConnection, prefixes: readonly Uint8Array[]): Promise<PrefixRead> {
  let revision: number | undefined;
  const records: KeyRecord[] = [];
  for (const p of prefixes) {
    const read = await readPrefix(conn, p, revision);
    revision = read.revision;
    records.push(...read.records);
  }
  return { revision: revision ?? 0, records };
}
