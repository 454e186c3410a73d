import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Procs, show } from '../harness/cli';
import { startDemo, type RunningDemo } from '../harness/demo';
import { eventually, sleep } from '../harness/etcd';
import type { LockJson } from '../../src/cli/lockJson';

/**
 * `npm run demo -- --no-editor` (dist/demo.js, built by npm test) as a user runs it: it starts its own etcd and the
 * workload, the locks it promises are there as `locklens list --json` sees them (queues with holders and waiters, the
 * stuck holder that never lets go, the single-key try-lock, the election), and Ctrl-C (SIGINT) stops every process it
 * started and removes its temp dir.
 *
 * Every process the demo starts inherits a marker variable from this test's environment, so "nothing left" is checked
 * by looking at every process on the machine, not only the ones the demo says it started; and whatever happens, the
 * `after` hook SIGKILLs every process carrying it.
 */


describe('npm run demo -- --no-editor', { timeout: 3 * 60_000 }, () => {
  const procs = new Procs('');
  let demo: RunningDemo;
  let endpoint = '';
  let tempDir = '';
  let stuckLease = '';

  async function list(): Promise<Map<string, LockJson>> {
    const r = await procs.run(['list', '--endpoints', endpoint, '--prefix', '/locks/', '--prefix', '/election/', '--json']);
    assert.equal(r.code, 0, show(r));
    const { locks } = JSON.parse(r.stdout) as { locks: LockJson[] };
    return new Map(locks.map((l) => [l.name, l]));
  }

  before(async () => {
    demo = await startDemo(['--no-editor']);
    ({ endpoint, tempDir, stuckLease } = demo);
  });

  after(async () => {
    // Whatever happened: the demo's own group, then every process that carries this run's marker.
    await demo?.dispose();
    await procs.dispose();
  });

  test('it starts etcd on loopback with its data under a temp dir, and names the stuck lease', () => {
    assert.match(endpoint, /^127\.0\.0\.1:\d+$/, demo.proc.stdout);
    assert.match(tempDir, /locklens-demo-/, demo.proc.stdout);
    assert.ok(existsSync(tempDir), `${tempDir} exists while the demo runs`);
    assert.match(stuckLease, /^[0-9a-f]+$/, demo.proc.stdout);
  });

  test('locklens list --json shows the queues, the stuck holder and its waiters, the try-lock and the election', async () => {
    // The workload moves: each promise must be seen at least once (most are at once; a queue can be empty briefly).
    const checks: Record<string, (locks: Map<string, LockJson>) => boolean> = {
      'billing-batch: a Go-compatible holder and waiters': (m) => isQueue(m.get('/locks/billing-batch'), 1),
      'report-export: etcdctl and Mutex services queue together': (m) => isQueue(m.get('/locks/report-export'), 1),
      'schema-migration: held': (m) => isQueue(m.get('/locks/schema-migration'), 0),
      'payments-reconcile: the stuck holder, two waiters behind it': (m) => {
        const l = m.get('/locks/payments-reconcile');
        return isQueue(l, 2) && l!.holder!.lease === stuckLease;
      },
      'cron-leader-single: a single-key lock with a lease': (m) => {
        const l = m.get('/locks/cron-leader-single');
        return l?.kind === 'single' && !!l.holder?.lease && l.holder.key === '/locks/cron-leader-single';
      },
      '/election/scheduler: a leader and a candidate': (m) => {
        const l = m.get('/election/scheduler');
        return l?.kind === 'election' && !!l.holder && l.waiters.length >= 1;
      },
    };
    const seen = new Set<string>();
    let last = new Map<string, LockJson>();
    try {
      await eventually(async () => {
        last = await list();
        for (const [name, check] of Object.entries(checks)) if (check(last)) seen.add(name);
        return seen.size === Object.keys(checks).length;
      }, 60_000, 'every promised lock');
    } catch (e) {
      const missing = Object.keys(checks).filter((c) => !seen.has(c));
      assert.fail(`${(e as Error).message}; never seen: ${missing.join('; ')}\nlast list: ${JSON.stringify([...last.values()], null, 1)}`);
    }
  });

  test('the stuck holder never releases: the same key and token, its lease kept alive', async () => {
    const first = (await list()).get('/locks/payments-reconcile')!;
    await sleep(6000);
    const later = (await list()).get('/locks/payments-reconcile')!;
    assert.equal(later.holder?.key, first.holder?.key);
    assert.equal(later.holder?.createRevision, first.holder?.createRevision);
    assert.equal(later.holder?.lease, stuckLease);
    assert.ok((later.holder?.ttl ?? 0) > 0, `its lease lives: ${JSON.stringify(later.holder)}`);
  });

  test('Ctrl-C (SIGINT) stops etcd, the workload and every process it started, and removes its temp dir', async () => {
    const before = demo.marked();
    assert.ok(before.length >= 8, `the demo and its processes carry the marker (${before.length})`);
    demo.proc.signal('SIGINT');
    const r = await demo.proc.wait(30_000);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /stopped .*temp dir removed/);
    // Its processes are gone (the demo waits for every group; allow a moment for the last exits to be reaped).
    const left = await eventually(() => (demo.marked().length === 0 ? [] : undefined), 5000, 'no process left').catch(() => demo.marked());
    assert.deepEqual(left.map(describePid), [], 'processes left behind');
    assert.ok(!existsSync(tempDir), `${tempDir} removed`);
    assert.equal(await listening(endpoint), false, `nothing listens on ${endpoint} any more`);
  });
});

function isQueue(lock: LockJson | undefined, waiters: number): boolean {
  return lock?.kind === 'queue' && !!lock.holder && lock.waiters.length >= waiters;
}

function describePid(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`;
  } catch {
    return `${pid} (gone)`;
  }
}

function listening(endpoint: string): Promise<boolean> {
  const [host, port] = endpoint.split(':');
  return new Promise((done) => {
    const socket = connect({ host, port: Number(port) });
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}
