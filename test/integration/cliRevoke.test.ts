import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { show } from '../harness/cli';
import { fixture, HEX_KEY } from '../harness/cliFixture';

/**
 * Black-box tests of `locklens revoke` (dist/locklens.js) against a real etcd, side by side with real `etcdctl lock`
 * processes: revoking a lease deletes every key it holds, and the next waiter gets the lock.
 */

describe('locklens over etcd (--endpoints), against etcdctl lock', () => {
  const f = fixture();

  describe('locklens revoke', () => {
    test("revoking a holder's lease deletes its key and the next etcdctl waiter gets the lock", async () => {
      const holder = await f.etcdctlLock('rv');
      await holder.proc.until((p) => p.lines[0], 'holder holds');
      const waiter = await f.etcdctlLock('rv');
      assert.equal(waiter.proc.stdout, '');
      const lease = HEX_KEY('rv').exec(holder.key)![1];
      const r = await f.procs.run(['revoke', lease, '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 0, show(r));
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0], new RegExp(`^revoked lease ${lease} at revision \\d+; deleted 1 key\\(s\\)$`), r.stdout);
      assert.deepEqual(lines.slice(1).map((l) => l.trim()), [holder.key]);
      const got = await waiter.proc.until((p) => p.lines[0], 'the waiter acquires');
      assert.equal(got, waiter.key);
      assert.deepEqual(await f.keys('rv/'), [waiter.key]);
    });

    test('0x-prefixed and upper-case lease IDs are accepted', async () => {
      const holder = await f.etcdctlLock('rv-hex');
      const lease = HEX_KEY('rv-hex').exec(holder.key)![1];
      const r = await f.procs.run(['revoke', `0x${lease.toUpperCase()}`, '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 0, show(r));
      assert.ok(r.stdout.includes(holder.key), show(r));
      assert.deepEqual(await f.keys('rv-hex/'), []);
    });

    test('a lease that does not exist exits 8', async () => {
      const grant = await f.etcd.etcdctl(['lease', 'grant', '30']);
      const id = /lease ([0-9a-f]+) granted/.exec(grant)![1];
      await f.etcd.etcdctl(['lease', 'revoke', id]);
      for (const args of [['--yes'], []]) {
        const r = await f.procs.run(['revoke', id, ...args, '--endpoints', f.ep]);
        assert.equal(r.code, 8, `${args.join(' ')}: ${show(r)}`);
        assert.match(r.stderr, /does not exist/, show(r));
      }
    });

    test('a lease holding several keys: all of them are deleted and printed', async () => {
      const grant = await f.etcd.etcdctl(['lease', 'grant', '30']);
      const id = /lease ([0-9a-f]+) granted/.exec(grant)![1];
      await f.etcd.etcdctl(['put', `--lease=${id}`, 'rv-multi/one', 'x']);
      await f.etcd.etcdctl(['put', `--lease=${id}`, 'rv-multi/two', 'x']);
      await f.etcd.etcdctl(['put', 'rv-multi/other', 'x']);
      const r = await f.procs.run(['revoke', id, '--yes', '--endpoints', f.ep]);
      assert.equal(r.code, 0, show(r));
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0], /deleted 2 key\(s\)$/, r.stdout);
      assert.deepEqual(lines.slice(1).map((l) => l.trim()).sort(), ['rv-multi/one', 'rv-multi/two']);
      assert.deepEqual(await f.keys('rv-multi/'), ['rv-multi/other']);
    });

    test('an invalid lease text exits 2', async () => {
      for (const text of ['xyz', '0', '-1', '8000000000000000']) {
        const r = await f.procs.run(['revoke', text, '--yes', '--endpoints', f.ep]);
        assert.equal(r.code, 2, `${text}: ${show(r)}`);
        assert.match(r.stderr, /is not a lease ID|Unknown option/, `${text}: ${show(r)}`);
      }
    });

    test('without --yes and no terminal it refuses (exit 2), says to pass --yes, and revokes nothing', async () => {
      const holder = await f.etcdctlLock('rv-noyes');
      const lease = HEX_KEY('rv-noyes').exec(holder.key)![1];
      const r = await f.procs.run(['revoke', lease, '--endpoints', f.ep], { input: 'y\n' });
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /pass --yes/, show(r));
      assert.deepEqual(await f.keys('rv-noyes/'), [holder.key]);
      assert.equal(holder.proc.running, true);
    });
  });
});
