/**
 * How serve's V8 heap is sized: it runs for months beside the services it watches, so its memory at the peak matters
 * more than the last percent of CPU (docs/BENCHMARKS.md, serve, the third, fifth, seventh and tenth rounds).
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';

/**
 * How far past what survived its last full collection V8 lets serve's heap grow before collecting again (V8 chooses up
 * to 300 % for a process that allocates fast). What serve allocates dies within seconds (reads, TTL samples, scrapes),
 * so that headroom was RSS of garbage: 210-320 MB at most under load against 181-195 MB at 30 %, for about a tenth
 * more CPU under load and a fifth more quiet, the collector running more often (the third round).
 */
const HEAP_GROWING_PERCENT = 30;
/**
 * Every full collection also compacts the old generation. Without it, V8 moves objects only out of its emptiest pages,
 * and under a steady load the pages serve's long-lived objects are scattered over stay committed: over three minutes at
 * 200 changes/s its heap kept growing past what it keeps (old space 55 MB live, up to 110 MB committed) and RSS went
 * 199, 211, 219 MB minute by minute; compacting, it stays at 165-175 MB between collections, for a CPU cost within the
 * runs' noise (the fifth round). The price is a peak at each full collection: compacting copies everything live before
 * it frees the old pages, 60-70 MB more for tens of ms (the seventh round). A peak that stays where it is was chosen
 * over a heap that grows.
 */
const V8_FLAGS = [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`, '--compact-on-every-full-gc'];
/**
 * The young generation's semi-spaces grow to 4 MB, not V8's 16. At 8 MB serve peaked 13 MB lower than with V8's
 * sizing, for no CPU the runs could tell apart (the seventh and eighth rounds), but at 196-203 MB under the bench's load,
 * over the 200 MB target in some minutes, and at 204-210 MB recording its history; at 4 MB, 186-193 and 198-202 MB, for
 * a CPU cost within the runs' noise (the eleventh round; the seventh measured it at a few per cent).
 */
export const SEMI_SPACE_MB = 4;
const MB = 1024 * 1024;

/** How long the young generation waits for the first reads before it grows anyway (a store that cannot be reached). */
const FIRST_READS_MS = 60_000;

/**
 * Sizes the heap for as long as the process runs; `firstReads` settles once every connection has read its store whole.
 * Returns what stops the young generation's cap.
 *
 * V8 reads the two flags at each full collection, so set now they rule. Its young generation's largest size is fixed as
 * the process starts (`--max-semi-space-size` then changes nothing), but how much it grows by is read at each growth
 * (`--semi-space-growth-factor`): after every collection the factor is set so that the next growth lands on
 * SEMI_SPACE_MB and no further (1 once there). The observer is told of a collection only after the task that made it,
 * so the space could grow twice within one task that keeps much of what it allocates: the first reads do, building
 * every lock's state at once (in one of the bench's first two runs with the cap, the space grew to V8's largest), so it
 * does not grow at all until they are done. Afterwards a growth needs as much to have survived since the last as the
 * space holds, many collections apart; but while the space is below the cap (V8 shrinks it when little is allocated),
 * one task that keeps much, such as a whole read after a reconnect, can still take it past. So this is best-effort:
 * where the cap must hold, give node `--max-semi-space-size=4` (the systemd unit does); V8 never grows past that.
 */
export function sizeHeap(firstReads: Promise<unknown>): () => void {
  for (const flag of V8_FLAGS) setFlagsFromString(flag);
  let factor = 0;
  let growing = false;
  const cap = () => {
    const semiSpace = semiSpaceMb();
    if (semiSpace === undefined) return; // a V8 without that space: its own sizing stands
    const next = growing ? Math.max(1, Math.floor(SEMI_SPACE_MB / semiSpace)) : 1;
    if (next !== factor) setFlagsFromString(`--semi-space-growth-factor=${(factor = next)}`);
  };
  const observer = new PerformanceObserver(cap);
  observer.observe({ entryTypes: ['gc'] });
  cap();
  let stopped = false;
  const grow = () => {
    if (stopped) return;
    growing = true;
    clearTimeout(late);
    cap();
  };
  const late = setTimeout(grow, FIRST_READS_MS).unref();
  firstReads.then(grow, grow);
  return () => {
    stopped = true;
    clearTimeout(late);
    observer.disconnect();
  };
}

/**
 * Has V8 compile WebAssembly with Liftoff, its baseline compiler, alone; call it before the recorder opens. The recorded
 * history's SQLite (node-sqlite3-wasm, 1.2 MB of WebAssembly) was otherwise compiled again by TurboFan on V8's worker
 * threads, and what that compiling allocated stayed in their malloc arenas: a process recording 60,000 events peaked
 * at 148-157 MB RSS against 124-126 MB, and spent 6.1-7.0 s of CPU against 5.3-6.2 s (docs/BENCHMARKS.md, serve, the
 * eleventh round). SQLite's work per event is small beside the rest of serve's; that compiling was not.
 */
export function compileWasmWithLiftoff(): void {
  setFlagsFromString('--liftoff-only');
}

/**
 * The semi-space's capacity in MB, a power of two: what it can hold (used and available) less its pages' headers,
 * 1006 KB of 1 MB. Not `space_size`, which counts the second semi-space only once V8 has committed it.
 */
export function semiSpaceMb(): number | undefined {
  const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  return young && 2 ** Math.round(Math.log2((young.space_used_size + young.space_available_size) / MB));
}
