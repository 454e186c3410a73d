import { EtcdConnection } from '../src/core/etcd/connect';
import { errorMessage } from '../src/core/errors';
import { Mutex } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
import type { StuckReport } from './workload';

/**
 * `demo.js --service stuck-holder --endpoints E --lock NAME`: the demo's incident. A service that took its lock with
 * the Go-compatible Mutex and then hung: its lease is kept alive (the keepalive runs on its own, as in a Go service
 * whose worker goroutine is deadlocked), but it never releases. Its waiters queue behind it until someone revokes the
 * lease. It reports on stdout, one JSON line per change (see StuckReport); after losing the lock it queues again 30 s
 * later, so the incident comes back. SIGINT or SIGTERM: it revokes its lease and exits.
 */
export async function runStuckHolder(endpoints: string[], lock: string): Promise<number> {
  const report = (r: StuckReport) => process.stdout.write(JSON.stringify(r) + '\n');
  const stop = new AbortController();
  let session: Session | undefined;
  const onSignal = () => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const conn = await EtcdConnection.open({ endpoints });
  try {
    while (!stop.signal.aborted) {
      session = await Session.create(conn, 20);
      try {
        const hold = await new Mutex(session, lock).acquire({ signal: stop.signal });
        report({ held: { key: hold.key.toString(), lease: session.leaseId, token: hold.fencingToken, pid: process.pid } });
        // Stuck: nothing here ever calls hold.release(). Only losing the lock, or being told to stop, ends the wait.
        const lost = await new Promise<string | undefined>((resolve) => {
          hold.onDidLose((e) => resolve(e.message));
          stop.signal.addEventListener('abort', () => resolve(undefined), { once: true });
        });
        if (lost !== undefined) report({ lost });
      } catch (e) {
        if (stop.signal.aborted) break;
        report({ error: `could not take ${lock}: ${errorMessage(e)}` });
      }
      if (stop.signal.aborted) break;
      session.dispose();
      session = undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 30_000);
        stop.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  } finally {
    await session?.revoke().catch(() => undefined);
    conn.close();
  }
  return 0;
}
