/**
 * Bytes a lock's state keeps while the lock stays as it is (a member's key, its value), packed into slabs of their own.
 *
 * `Buffer.from` of a few bytes takes them from Node's shared 8 KB pool, among whatever else was allocated then (a
 * read's packets, its paths, its replies), and the few kept keep the whole slab: a ZooKeeper watch of 2,000 locks under
 * load kept 473 slabs, 3.7 MB, for about 10,000 keys and values of 20-60 bytes (docs/BENCHMARKS.md, serve, the tenth
 * round). Here a slab holds only what is kept, so it goes once the locks whose bytes it holds have changed.
 */

const SLAB_BYTES = 16 * 1024;
/** Longer than this, bytes get an allocation of their own: a slab is for the many small ones. */
const LARGEST_PACKED = SLAB_BYTES / 8;

let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let used = 0;

/** A copy of `bytes` to keep. */
export function keptBytes(bytes: Uint8Array): Buffer {
  const copy = room(bytes.length);
  copy.set(bytes);
  return copy;
}

/** `text` in UTF-8, to keep. */
export function keptText(text: string): Buffer {
  const kept = room(Buffer.byteLength(text));
  kept.write(text);
  return kept;
}

function room(length: number): Buffer {
  // Not a view of the slab: an empty one would keep it all the same.
  if (length === 0) return Buffer.alloc(0);
  if (length > LARGEST_PACKED) return Buffer.allocUnsafeSlow(length);
  if (used + length > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    used = 0;
  }
  used += length;
  return slab.subarray(used - length, used);
}
