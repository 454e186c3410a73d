/**
 * The time zone a lock row's writer keeps, told from when the row says it was written: ShedLock without usingDbTime()
 * writes `locked_at` and `lock_until` on its JVM's clock in the JVM's zone, and compares `lock_until` with that clock.
 * LockLens reads the row against the database's UTC clock (see tableLayouts.ts), so such a row's TTL is off by the
 * zone's offset until it is added back. Pure: the ages are passed in.
 */

/** More than any clock skew between the database and its clients, less than any time zone's offset from UTC. */
const ZONE_SKEW_S = 15 * 60;
/** Zones are whole quarter hours from UTC. */
const QUARTER_HOUR_S = 15 * 60;

/**
 * `offset`: seconds the writer's clock is behind the database's UTC (negative: ahead), to be added to a TTL read
 * against that UTC; `note` says it in words ('5.0 h behind').
 */
export interface WriterZone {
  readonly offset: number;
  readonly note: string;
}

/**
 * The writer's zone from a row's `age` (the database's now less when the row says it was written, in seconds) and,
 * for a row seen written since the last read, `sinceLastRead` (seconds from that read to this one). A row written
 * ahead of the database's clock is in a zone east of UTC; one written since the last read yet more than that long
 * ago, in a zone west of it (an old row is not otherwise told from one just written hours behind). Clocks off by less
 * than ZONE_SKEW_S are not zones: undefined.
 */
export function writerZone(age: number, sinceLastRead?: number): WriterZone | undefined {
  const behind = sinceLastRead === undefined ? 0 : age - sinceLastRead;
  const off = age < -ZONE_SKEW_S ? age : behind > ZONE_SKEW_S ? behind : 0;
  if (off === 0) return undefined;
  const offset = Math.round(off / QUARTER_HOUR_S) * QUARTER_HOUR_S;
  return { offset, note: `${(Math.abs(offset) / 3600).toFixed(1)} h ${offset < 0 ? 'ahead of' : 'behind'}` };
}
