import type { ConnectionProfile } from '../../src/core/profile';
import { displayKey } from '../../src/core/keys';
import type { LockEvent } from '../../src/core/lockEventTypes';
import { holderCount, members, type ChangeSet, type LockMember, type LockState } from '../../src/core/lockState';
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { openBackend } from '../../src/core/stores';

/**
 * What `locklens serve` does for one connection, as far as the recorded history needs it: open the backend, watch the
 * prefixes, turn change sets into lock events, record them. Until serve's pipeline (src/core/lockEvents.ts and
 * src/cli/serve/watcher.ts) is here, a minimal adapter makes the events: a member that appears holding or waiting
 * starts a hold or a wait, one that goes ends it (a hold `released`: this adapter cannot tell an expiry), and a waiter
 * that becomes the holder ends its wait granted. The lead switches this to serve's real pipeline.
 */
export async function recordWatch(options: { dir: string; connection: string; profile: ConnectionProfile; prefixes: readonly string[] }) {
  const recorder = await HistoryRecorder.open(options.dir);
  const backend = await openBackend(options.profile);
  const watch = backend.watch(
    options.prefixes.map((p) => Buffer.from(p)),
    { pollIntervalMs: 100, minNotifyIntervalMs: 0 },
  );
  const adapter = new MinimalAdapter(options.connection);
  const subscription = watch.onDidChangeLocks((set) => {
    for (const e of adapter.events(set, Date.now())) recorder.record(e, backend.kind);
  });
  await watch.start();
  adapter.started = true;
  recorder.caughtUp(options.connection);
  return {
    recorder,
    /** Stops as serve does on SIGTERM: the watch closed, what is queued written, the data directory given up. */
    close: async () => {
      subscription.dispose();
      watch.dispose();
      backend.close();
      await recorder.close();
    },
  };
}

interface Seen {
  readonly lock: LockState;
  readonly holders: Map<string, LockMember>;
  readonly waiters: Map<string, { readonly member: LockMember; readonly since: number }>;
}

class MinimalAdapter {
  private readonly locks = new Map<string, Seen>();
  /** The watch's first read is done: what it found then was in place already, what comes after is seen as it happens. */
  started = false;

  constructor(private readonly connection: string) {}

  events(set: ChangeSet, now: number): LockEvent[] {
    // A first read or a reload finds members in place: their starts were not seen.
    const exact = this.started && !set.resynced;
    const out: LockEvent[] = [];
    for (const id of set.removed) {
      const seen = this.locks.get(id);
      if (seen) out.push(...this.diff(seen, undefined, now, exact));
      this.locks.delete(id);
    }
    for (const lock of set.changed) {
      out.push(...this.diff(this.locks.get(lock.id) ?? { lock, holders: new Map(), waiters: new Map() }, lock, now, exact));
    }
    return out;
  }

  private diff(seen: Seen, lock: LockState | undefined, now: number, exact: boolean): LockEvent[] {
    const base = (l: LockState, m: LockMember) => ({
      connection: this.connection,
      lockId: l.id,
      lock: displayKey(l.name),
      kind: l.kind,
      member: { key: displayKey(m.key), owner: m.owner, token: m.token },
      at: now,
      exact,
    });
    const holders = new Map((lock ? members(lock).slice(0, holderCount(lock)) : []).map((m) => [displayKey(m.key), m]));
    const waiting = new Map((lock?.waiters ?? []).map((m) => [displayKey(m.key), m]));
    const out: LockEvent[] = [];
    const ended = [...seen.holders].filter(([k]) => !holders.has(k));
    for (const [, m] of ended) out.push({ ...base(seen.lock, m), type: 'holdEnded', how: 'released', heldMs: null });
    for (const [k, w] of seen.waiters) {
      if (!waiting.has(k)) out.push({ ...base(seen.lock, w.member), type: 'waitEnded', granted: holders.has(k), waitedMs: now - w.since });
    }
    for (const [k, m] of holders) {
      if (seen.holders.has(k)) continue;
      const waited = seen.waiters.get(k);
      out.push({ ...base(lock!, m), type: 'holdStarted', waitedMs: waited ? now - waited.since : null, handoff: ended.length > 0 && seen.waiters.size > 0 });
    }
    const waiters = new Map<string, { member: LockMember; since: number }>();
    for (const [k, m] of waiting) {
      const before = seen.waiters.get(k);
      if (!before) out.push({ ...base(lock!, m), type: 'waitStarted' });
      waiters.set(k, { member: m, since: before?.since ?? now });
    }
    if (lock) this.locks.set(lock.id, { lock, holders, waiters });
    return out;
  }
}
