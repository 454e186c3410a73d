import { setMaxListeners } from 'node:events';
import { call, EtcdConnection } from '../src/core/etcd/connect';
import { errorMessage, isLockLensError } from '../src/core/errors';
import { leaseDecimal } from '../src/core/keys';
import { Mutex } from '../src/core/etcd/mutex';
import { Session } from '../src/core/etcd/session';
import { sleep } from '../src/core/sleep';
import { Services, type ServicesOptions } from './services';
import { TRANSFER_LOCKS, transferRound } from './transfers';

/**
 * The simulated services of the demo, contending for named locks the way real ones do:
 *
 * - `/locks/billing-batch`: three services using LockLens's Go-compatible `concurrency.Mutex` (in this process, each
 *   with its own connection and session, as separate services would be), holding 4-9 s;
 * - `/locks/report-export`: two looping `etcdctl lock /locks/report-export sleep N` processes and one Mutex service
 *   queue together (the same key layout, so they exclude each other);
 * - `/locks/migrations`: two long, rarer holds: sometimes free, sometimes contended;
 * - `/locks/reconcile`: the incident. A process (`--service stuck-holder`) holds it and keeps its lease alive
 *   but never releases; an `etcdctl lock` loop and a Mutex service queue behind it. Revoking its lease (from
 *   LockLens) lets them through; the stuck service notices it lost the lock, and 30 s later queues again, so the
 *   incident comes back for the next try;
 * - `/locks/cron-leader-single`: a single-key try-lock (put if `CreateRevision == 0`, with a lease), two contenders;
 * - `/election/scheduler`: `etcdctl elect` with node-a and node-b, each resigning now and then;
 * - `/locks/transfer-alice` and `/locks/transfer-bob`: a real deadlock (transfers.ts), two services each holding one
 *   and queued for the other with the same lease, until the user force-releases one hold.
 */

export const PREFIXES = ['/locks/', '/election/'] as const;
export const LOCKS = {
  billing: '/locks/billing-batch',
  report: '/locks/report-export',
  migration: '/locks/migrations',
  payments: '/locks/reconcile',
  cron: '/locks/cron-leader-single',
  election: '/election/scheduler',
  transferAlice: TRANSFER_LOCKS.alice,
  transferBob: TRANSFER_LOCKS.bob,
} as const;

export interface WorkloadOptions extends ServicesOptions {
  readonly endpoints: readonly string[];
  /** How to start this program again, for the stuck holder's own process: `[node, dist/demo.js]`. */
  readonly self: readonly [string, string];
}

/** What the stuck holder reports (one JSON line on its stdout per change). */
export interface StuckReport {
  readonly held?: { readonly key: string; readonly lease: string; readonly token: number; readonly pid: number };
  readonly lost?: string;
  readonly error?: string;
}

/** Random whole milliseconds in [min, max] seconds. */
const between = (min: number, max: number) => Math.round((min + Math.random() * (max - min)) * 1000);

export class Workload extends Services {
  private readonly connections = new Set<EtcdConnection>();
  /** The stuck holder's current hold, as it last reported it. */
  stuck?: StuckReport['held'];
  private stuckHeld?: () => void;

  constructor(private readonly options: WorkloadOptions) {
    super(options);
    // Every service's waits listen to the one stop signal.
    setMaxListeners(200, this.abort.signal);
  }

  /** Starts every service; resolves once the stuck holder holds its lock and its waiters are queued behind it. */
  async start(): Promise<void> {
    const held = new Promise<void>((resolve) => (this.stuckHeld = resolve));
    this.run('payments-reconciler', () => this.stuckHolder());
    await Promise.race([held, sleep(30_000, this.abort.signal)]);
    if (!this.stuck) throw new Error('the stuck holder did not take /locks/reconcile within 30 s');

    // Behind the stuck holder, in this order: an etcdctl job and a Go-compatible service.
    this.run('payments-cron', () => this.etcdctlLock('payments-cron', LOCKS.payments, [2, 4], [1, 3]));
    await this.waitForKeys(`${LOCKS.payments}/`, 2);
    this.run('payments-api', () => this.mutexService('payments-api', LOCKS.payments, [2, 4], [1, 3]));
    await this.waitForKeys(`${LOCKS.payments}/`, 3);

    for (const name of ['billing-1', 'billing-2', 'billing-3']) this.run(name, () => this.mutexService(name, LOCKS.billing, [4, 9], [1, 4]));
    for (const name of ['report-a', 'report-b']) this.run(name, () => this.etcdctlLock(name, LOCKS.report, [3, 8], [1, 3]));
    this.run('report-c', () => this.mutexService('report-c', LOCKS.report, [3, 6], [1, 3]));
    for (const name of ['migrate-eu', 'migrate-us']) this.run(name, () => this.mutexService(name, LOCKS.migration, [8, 15], [6, 20]));
    for (const name of ['cron-a', 'cron-b']) this.run(name, () => this.tryLock(name, LOCKS.cron, [8, 15], [0.5, 1.5]));
    this.run('transfers', () => this.transfers());
    this.run('node-a', () => this.elect('node-a', [15, 25]));
    await sleep(500);
    this.run('node-b', () => this.elect('node-b', [15, 25]));
  }

  /** Stops every service (sessions are revoked as their services end), then closes the connections left. */
  override async stop(): Promise<void> {
    await super.stop();
    for (const c of this.connections) c.close();
  }

  private async connect(): Promise<EtcdConnection> {
    const conn = await EtcdConnection.open({ endpoints: this.options.endpoints });
    this.connections.add(conn);
    return conn;
  }

  private async waitForKeys(prefix: string, count: number): Promise<void> {
    const conn = await this.connect();
    try {
      for (let i = 0; i < 300 && !this.stopping; i++) {
        const res = await conn.client.getAll().prefix(prefix).count();
        if (res >= count) return;
        await sleep(100, this.abort.signal);
      }
      if (!this.stopping) throw new Error(`${count} keys under ${prefix} not seen within 30 s`);
    } finally {
      conn.close();
      this.connections.delete(conn);
    }
  }

  /**
   * A service using the Go-compatible Mutex: one session (lease kept alive) for its life, as Go services keep one
   * `concurrency.Session`; acquire, work, release, rest, again. A session revoked from outside (the user trying Revoke
   * Lease on it) is replaced by a new one.
   */
  private async mutexService(who: string, lock: string, hold: [number, number], rest: [number, number], ttl = 15): Promise<void> {
    const conn = await this.connect();
    let session: Session | undefined;
    try {
      while (!this.stopping) {
        if (!session || session.lost) {
          session?.dispose();
          session = await Session.create(conn, ttl);
        }
        const mutex = new Mutex(session, lock);
        let h;
        try {
          h = await mutex.acquire({ signal: this.abort.signal });
        } catch (e) {
          if (this.stopping) break;
          if (isLockLensError(e, 'LOCK_LOST')) {
            this.log(who, `lost its place in ${lock}: ${errorMessage(e)}`);
            continue;
          }
          throw e;
        }
        this.log(who, `holds ${lock} (fencing token ${h.fencingToken})`, true);
        let lost = false;
        h.onDidLose((e) => {
          lost = true;
          this.log(who, `lost ${lock} while holding it: ${e.message}`);
        });
        await sleep(between(...hold), this.abort.signal);
        if (!lost) await h.release().catch(() => undefined);
        this.log(who, `released ${lock}`, true);
        await sleep(between(...rest), this.abort.signal);
      }
    } finally {
      await session?.revoke().catch(() => undefined);
      conn.close();
      this.connections.delete(conn);
    }
  }

  /** The deadlocked transfers, round after round, each service with a connection of its own. */
  private async transfers(): Promise<void> {
    const conns = [await this.connect(), await this.connect()] as const;
    try {
      while (!this.stopping) await transferRound(conns, (who, message, verbose) => this.log(who, message, verbose), this.abort.signal);
    } finally {
      for (const c of conns) {
        c.close();
        this.connections.delete(c);
      }
    }
  }

  /** `etcdctl lock --ttl 10 LOCK sleep N` in a loop: real etcdctl processes, each in its own process group. */
  private async etcdctlLock(who: string, lock: string, hold: [number, number], rest: [number, number]): Promise<void> {
    while (!this.stopping) {
      const seconds = Math.max(1, Math.round(between(...hold) / 1000));
      const exit = await this.runProcess(who, 'etcdctl', [`--endpoints=${this.options.endpoints.join(',')}`, 'lock', '--ttl', '10', lock, 'sleep', String(seconds)]);
      if (this.stopping) break;
      this.log(who, `etcdctl lock ${lock} sleep ${seconds} ended (${exit})`, true);
      await sleep(between(...rest), this.abort.signal);
    }
  }

  /**
   * A single-key try-lock, the seed articles' recipe: put the key with the contender's lease if
   * `CreateRevision(key) == 0`, else try again later. The holder deletes the key only if it is still the one it
   * created (owner-only). One lease, kept alive, for the contender's life (replaced if someone revokes it).
   */
  private async tryLock(who: string, key: string, hold: [number, number], retry: [number, number]): Promise<void> {
    const conn = await this.connect();
    const k = Buffer.from(key);
    let session: Session | undefined;
    try {
      while (!this.stopping) {
        if (!session || session.lost) {
          session?.dispose();
          session = await Session.create(conn, 10);
        }
        const res = await call(
          conn.client.kv.txn({
            compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: [{ request_put: { key: k, value: Buffer.from(`${who} pid ${process.pid}`), lease: leaseDecimal(session.leaseId) } }],
            failure: [],
          }),
        );
        if (res.succeeded) {
          const created = Number(res.header.revision);
          this.log(who, `holds ${key} (single key, lease ${session.leaseId})`, true);
          await sleep(between(...hold), this.abort.signal);
          await call(
            conn.client.kv.txn({
              compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: created }],
              success: [{ request_delete_range: { key: k } }],
              failure: [],
            }),
          ).catch(() => undefined);
          this.log(who, `released ${key}`, true);
        }
        await sleep(between(...retry), this.abort.signal);
      }
    } finally {
      await session?.revoke().catch(() => undefined);
      conn.close();
      this.connections.delete(conn);
    }
  }

  /** `etcdctl elect /election/scheduler PROPOSAL`, resigning (SIGINT) after a while and campaigning again. */
  private async elect(proposal: string, term: [number, number]): Promise<void> {
    while (!this.stopping) {
      const seconds = Math.round(between(...term) / 1000);
      // --foreground: timeout stays in the group (it would make a process group of its own otherwise).
      const args = ['--foreground', '-s', 'INT', '-k', '5', String(seconds), 'etcdctl', `--endpoints=${this.options.endpoints.join(',')}`, 'elect', LOCKS.election, proposal];
      await this.runProcess(proposal, 'timeout', args);
      if (this.stopping) break;
      this.log(proposal, `resigned from ${LOCKS.election}`, true);
      await sleep(3000, this.abort.signal);
    }
  }

  /**
   * The stuck holder: `dist/demo.js --service stuck-holder` in its own process. It reports its hold as JSON lines;
   * if it exits it is started again.
   */
  private async stuckHolder(): Promise<void> {
    const who = 'payments-reconciler';
    const [node, script] = this.options.self;
    const args = [script, '--service', 'stuck-holder', '--endpoints', this.options.endpoints.join(','), '--lock', LOCKS.payments];
    const onLine = (line: string) => {
      let report: StuckReport;
      try {
        report = JSON.parse(line) as StuckReport;
      } catch {
        return;
      }
      if (report.held) {
        this.stuck = report.held;
        this.log(who, `holds ${LOCKS.payments} with lease ${report.held.lease} (token ${report.held.token}) and will never release it: revoke that lease`);
        this.stuckHeld?.();
      } else if (report.lost) {
        this.stuck = undefined;
        this.log(who, `lost ${LOCKS.payments}: ${report.lost}. It queues again in 30 s.`);
      } else if (report.error) {
        this.log(who, report.error);
      }
    };
    await this.runProcess(who, node, args, onLine);
    if (!this.stopping) {
      this.log(who, 'exited; starting it again in 3 s');
      await sleep(3000, this.abort.signal);
    }
  }

  /** Runs a process group to its end (or the workload's), returning how it ended. */
  private runProcess(who: string, command: string, args: string[], onLine?: (line: string) => void): Promise<string> {
    // The user's ETCDCTL_* settings (certificates, another cluster's endpoints) must not leak into the demo's etcdctl.
    const env: NodeJS.ProcessEnv = { ETCDCTL_API: '3' };
    for (const k of Object.keys(process.env)) if (k.startsWith('ETCDCTL_') && k !== 'ETCDCTL_API') env[k] = undefined;
    return this.runGroup(who, command, args, { env, onLine });
  }
}
