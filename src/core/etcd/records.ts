import { leaseHex } from '../keys';

/** How much of a value the model keeps: enough to tell an election's proposal, bounded for 1.5 MB values. */
export const VALUE_PREVIEW_BYTES = 1024;

/** One etcd key as the model holds it. Revisions fit a JS number for 2^53 writes, i.e. forever. */
export interface KeyRecord {
  readonly key: Buffer;
  readonly valuePreview: Buffer;
  readonly valueSize: number;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** Lowercase hex, '' when the key has no lease. */
  readonly lease: string;
}

/** The shape of a KeyValue as etcd3's raw gRPC clients return it (int64 as decimal strings). */
export interface RawKeyValue {
  key: Buffer;
  value: Buffer;
  create_revision: string;
  mod_revision: string;
  version: string;
  lease: string;
}

export function toKeyRecord(kv: RawKeyValue, stripPrefix = 0): KeyRecord {
  return {
    key: stripPrefix ? kv.key.subarray(stripPrefix) : kv.key,
    // Copy the preview so the model never pins a whole 1.5 MB gRPC buffer.
    valuePreview: Buffer.from(kv.value.subarray(0, VALUE_PREVIEW_BYTES)),
    valueSize: kv.value.length,
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: leaseHex(kv.lease),
  };
}
