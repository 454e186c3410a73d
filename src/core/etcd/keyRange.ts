/** How etcd's range requests (reads, watches, deletes) name every key under a prefix. */

/** The end of the range that holds every key starting with `prefix` (etcd's `clientv3.GetPrefixRangeEnd`). */
export function prefixRangeEnd(prefix: Uint8Array): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  // An empty prefix, or one of only 0xff bytes: "every key from here on" is spelled as a single NUL byte.
  return Buffer.from([0]);
}

/** The [key, range_end) that etcd reads or watches for a prefix; the empty prefix is the whole keyspace ("\0" to "\0"). */
export function prefixRange(prefix: Uint8Array): { key: Buffer; range_end: Buffer } {
  return { key: prefix.length ? Buffer.from(prefix) : Buffer.from([0]), range_end: prefixRangeEnd(prefix) };
}
