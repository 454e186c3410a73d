import type { KeyRecord } from '../../src/core/etcd/records';

export interface RecOptions {
  create: number;
  mod?: number;
  lease?: string;
  value?: string | Buffer;
  version?: number;
}

/** An etcd key as the model holds it, for unit tests of what is built from keys. */
export function rec(key: string | Buffer, o: RecOptions): KeyRecord {
  const value = typeof o.value === 'string' ? Buffer.from(o.value) : (o.value ?? Buffer.alloc(0));
  return {
    key: typeof key === 'string' ? Buffer.from(key) : key,
    valuePreview: value,
    valueSize: value.length,
    createRevision: o.create,
    modRevision: o.mod ?? o.create,
    version: o.version ?? 1,
    lease: o.lease ?? '',
  };
}

/** A Go-mutex member `<name>/<lease>` created at `create`. */
export function mutexKey(name: string, lease: string, create: number, mod = create): KeyRecord {
  return rec(`${name}/${lease}`, { create, mod, lease });
}
