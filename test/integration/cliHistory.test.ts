import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyJson } from '../../src/cli/commands/history';
import type { EtcdConnection } from '../../src/core/etcd/connect';
import { EtcdHistory } from '../../src/core/etcd/history';
import { answersProgressWhenCaughtUp } from '../../src/core/etcd/historyPlan';
import { lockId } from '../../src/core/etcd/lockModel';
import { isLockLensError } from '../../src/core/errors';
import { show } from '../harness/cli';
import { HEX_KEY } from '../harness/cliFixture';
import { historyFixture, type HistoryDoc } from '../harness/historyFixture';
import { redisCli } from '../harness/redisCli';

/**
 * Black-box tests of `locklens history` (dist/locklens.js) against a real etcd whose history real `etcdctl lock`
 * processes wrote, and against a store without history. What ran when is proven by what the processes wrote, never by
 * timing. Each etcd describe block has an etcd of its own: compactions and long histories change what the others would
 * read.
 */

const HOLD_KEYS = ['acquiredRevision', 'beforeHistory', 'end', 'endedRevision', 'key', 'lease', 'token', 'waiterCount', 'waiters'];

/** The etcd version's progress replies can end a read (else silence does, and says so). */
async function trustsProgress(f: { etcd: { etcdctl(args: string[]): Promise<string> } }): Promise<boolean> {
  return answersProgressWhenCaughtUp(JSON.parse(await f.etcd.etcdctl(['endpoint', 'status', '-w', 'json']))[0].Status.version as string);
}

describe('locklens history: the acceptance case (three etcdctl lock runs that came and went)', () => {
  const f = historyFixture();

  test('every hold in acquisition order, with its key, lease, revisions, waiters and end; the holder at every revision is the Go Mutex one', async () => {
    const gate = join(f.dir, 'gate');
    const record = join(f.dir, 'record');
    const runs: Awaited<ReturnType<typeof f.lockRecording>>[] = [];
    // Each one queued before the next starts: start order is queue order.
    for (let i = 0; i < 3; i++) runs.push(await f.lockRecording('jobs', gate, record));
    const created = await Promise.all(runs.map((r) => f.createRevision(r.key)));
    writeFileSync(gate, '');
    for (const r of runs) assert.equal((await r.proc.wait()).code, 0, show(await r.proc.wait()));
    // The order they ran in, as each wrote it while holding the lock: the truth the replay must match.
    const ran = readFileSync(record, 'utf8').trim().split('\n').map((l) => l.split(' '));
    assert.deepEqual(ran.map(([key]) => key), runs.map((r) => r.key), 'etcdctl ran them in queue order');
    // etcdctl unlocks and exits, leaving its lease to run out (10 s): gone now, whenever the replay runs.
    for (const r of runs) await f.etcd.etcdctl(['lease', 'revoke', HEX_KEY('jobs').exec(r.key)![1]]);

    const doc = await f.history('jobs');
    assert.deepEqual(Object.keys(doc).sort(), ['compactedAt', 'endedOnSilence', 'fromRevision', 'holds', 'lock', 'skippedBefore', 'toRevision']);
    assert.equal(doc.lock, 'jobs');
    assert.equal(doc.fromRevision, 1);
    assert.equal(doc.compactedAt, null);
    assert.equal(doc.skippedBefore, null);
    assert.equal(doc.endedOnSilence, false, 'events came: they prove the read');
    assert.equal(doc.holds.length, 3, JSON.stringify(doc, null, 2));
    doc.holds.forEach((h, i) => {
      assert.deepEqual(Object.keys(h).sort(), HOLD_KEYS, `hold ${i}: its fields`);
      assert.equal(h.key, runs[i].key, `hold ${i} is the ${i + 1}th run`);
      assert.equal(h.lease, HEX_KEY('jobs').exec(h.key)![1], `hold ${i}: the lease is the key's hex suffix`);
      assert.equal(h.token, created[i], `hold ${i}: the token is the key's create revision`);
      assert.equal(h.beforeHistory, false);
      assert.ok(h.endedRevision !== null && h.endedRevision > h.acquiredRevision, `hold ${i} ended after it began`);
      const lockRevision = Number(ran[i][1]);
      assert.ok(h.acquiredRevision <= lockRevision && lockRevision < h.endedRevision!, `hold ${i} holds at ETCD_LOCK_REV ${lockRevision}`);
      assert.equal(h.end, 'revokedOrExpired', `hold ${i}: its key went, and its lease since`);
    });
    assert.equal(doc.holds[0].acquiredRevision, created[0], 'the first took a free lock: held from its key’s creation');
    assert.deepEqual(doc.holds[0].waiters, [], 'no one waited yet when it took the lock');
    assert.equal(doc.holds[1].acquiredRevision, doc.holds[0].endedRevision, 'handed over at the revision the first key went');
    assert.deepEqual(doc.holds[1].waiters, [runs[2].key]);
    assert.deepEqual(doc.holds.map((h) => h.waiterCount), [0, 1, 0]);
    assert.equal(doc.holds[2].acquiredRevision, doc.holds[1].endedRevision);
    assert.deepEqual(doc.holds[2].waiters, []);
    assert.ok(doc.toRevision >= doc.holds[2].endedRevision!);

    await f.assertGoMutexOrder(doc);

    const text = await f.procs.run(['history', 'jobs', '--endpoints', f.ep]);
    assert.equal(text.code, 0, show(text));
    const lines = text.stdout.trim().split('\n');
    assert.equal(lines[0], `the queue jobs/…: revisions 1 to ${doc.toRevision} read, 3 holds`);
    doc.holds.forEach((h, i) => {
      assert.match(lines[i + 1], new RegExp(`^  ${h.key}  lease ${h.lease}  token ${h.token}  rev ${h.acquiredRevision} → ${h.endedRevision}  revoked or expired  ${h.waiters.length} waiting$`));
    });
  });

  test('a hold still holding has no end; a name with no history has no holds', async () => {
    const gate = join(f.dir, 'gate');
    const holder = await f.lockRecording('open', gate, join(f.dir, 'record'));
    const doc = await f.history('open');
    assert.equal(doc.holds.length, 1);
    assert.equal(doc.holds[0].key, holder.key);
    assert.equal(doc.holds[0].endedRevision, null);
    assert.equal(doc.holds[0].end, null);
    const text = await f.procs.run(['history', 'open', '--endpoints', f.ep]);
    assert.match(text.stdout, new RegExp(`${holder.key}  lease [0-9a-f]+  token \\d+  holding since rev \\d+  0 waiting`));
    writeFileSync(gate, '');
    await holder.proc.wait();

    const none = await f.history('never/used');
    assert.deepEqual(none.holds, []);
    assert.equal(none.fromRevision, 1);
    assert.equal(none.compactedAt, null);
    // Nothing came: only an etcd that confirms a watch caught up can prove there was nothing, and the output says which.
    const silent = !(await trustsProgress(f));
    assert.equal(none.endedOnSilence, silent);
    const noneText = await f.procs.run(['history', 'never/used', '--endpoints', f.ep]);
    assert.equal(/cannot confirm it had none/.test(noneText.stdout.split('\n')[1] ?? ''), silent, show(noneText));
  });

  test('a single key is replayed with --single: re-created, it is a new hold; deleted with its lease alive, it was released', async () => {
    const lease = /lease ([0-9a-f]+) granted/.exec(await f.etcd.etcdctl(['lease', 'grant', '60']))![1];
    await f.etcd.etcdctl(['put', '--lease', lease, '/locks/one', 'locked']);
    await f.etcd.etcdctl(['put', '--lease', lease, '/locks/one', 'relocked']);
    await f.etcd.etcdctl(['del', '/locks/one']);
    await f.etcd.etcdctl(['put', '/locks/one', 'again']);
    const second = await f.createRevision('/locks/one');
    const doc = await f.history('/locks/one', ['--single']);
    // etcdctl prints a lease as 16 hex digits; LockLens gives it as Go names keys by it, without leading zeros.
    assert.deepEqual(
      doc.holds.map((h) => [h.key, h.lease, h.endedRevision === null, h.end]),
      [['/locks/one', BigInt(`0x${lease}`).toString(16), false, 'released'], ['/locks/one', '', true, null]],
    );
    assert.equal(doc.holds[1].token, second);
    assert.deepEqual((await f.history('/locks/one')).holds, [], 'the queue /locks/one/… is another lock');
  });

  test('a key without a lease that was deleted was released; keys of the namespace are replayed without it', async () => {
    await f.etcd.etcdctl(['put', 'ns1/plain/00000000-0000-4000-8000-00000000000a', '']);
    await f.etcd.etcdctl(['del', 'ns1/plain/00000000-0000-4000-8000-00000000000a']);
    const doc = await f.history('plain', ['--namespace', 'ns1/']);
    assert.deepEqual(doc.holds.map((h) => [h.key, h.lease, h.end]), [['plain/00000000-0000-4000-8000-00000000000a', '', 'released']]);
    assert.deepEqual((await f.history('ns1/plain')).holds.length, 1, 'the same keys without the namespace');
  });

  test('an HTML name and a non-UTF-8 one come back exact (text, and keyBase64 for bytes that are not UTF-8)', async () => {
    const name = 'html/<img src=x onerror=alert(1)>';
    const lease = /lease ([0-9a-f]+) granted/.exec(await f.etcd.etcdctl(['lease', 'grant', '60']))![1];
    await f.etcd.etcdctl(['put', '--lease', lease, `${name}/${lease}`, '']);
    const r = await f.procs.run(['history', name, '--endpoints', f.ep, '--json']);
    assert.ok(r.stdout.includes(`${name}/${lease}`), `the raw output carries the key literally: ${r.stdout}`);
    const doc = JSON.parse(r.stdout) as HistoryDoc;
    assert.equal(doc.lock, name);
    assert.equal(doc.holds[0].key, `${name}/${lease}`);
    assert.equal(doc.holds[0].keyBase64, undefined);

    const conn = await f.connect();
    const bytes = Buffer.concat([Buffer.from('bin/'), Buffer.from([0xc3, 0xa9, 0xff])]);
    const granted = await conn.client.leaseClient.leaseGrant({ TTL: 60 });
    const hex = BigInt(granted.ID).toString(16);
    const key = Buffer.concat([bytes, Buffer.from(`/${hex}`)]);
    await conn.client.kv.put({ key, value: Buffer.alloc(0), lease: granted.ID });
    // Waiting as the lock is taken: one with UTF-8 bytes, one without.
    const waiters = [Buffer.concat([bytes, Buffer.from('/w1')]), Buffer.concat([bytes, Buffer.from([0x2f, 0xfe])])];
    await conn.client.kv.txn({ success: [{ request_delete_range: { key } }, ...waiters.map((w) => ({ request_put: { key: w, value: Buffer.alloc(0) } }))] });
    await conn.client.kv.put({ key, value: Buffer.alloc(0), lease: granted.ID });
    await conn.client.kv.txn({ success: waiters.map((w) => ({ request_delete_range: { key: w } })) });
    const replayed = await new EtcdHistory(conn).replay(bytes);
    assert.equal(replayed.lockId, lockId(bytes, 'go-mutex'), 'the live model’s id for this lock');
    assert.ok(replayed.holds[0].key.equals(key), 'the exact bytes');
    const json = historyJson(replayed);
    assert.equal(json.lock, 'bin/é\\xff');
    assert.ok(Buffer.from(json.lockBase64!, 'base64').equals(bytes));
    assert.equal(json.holds[0].key, `bin/é\\xff/${hex}`);
    assert.ok(Buffer.from(json.holds[0].keyBase64!, 'base64').equals(key));
    // The waiters' text and, beside it, every waiter's exact bytes in order, since one of them is not UTF-8.
    const w1 = json.holds.find((h) => h.key.endsWith('/w1'))!;
    assert.deepEqual(w1.waiters, ['bin/é\\xff/\\xfe']);
    assert.deepEqual(w1.waitersBase64!.map((w) => Buffer.from(w, 'base64')), [waiters[1]]);
    assert.equal(w1.waiterCount, 1);
    assert.equal(json.holds[0].waitersBase64, undefined, 'no waiter, no base64');
  });

  test('--help says what it does; the command is listed', async () => {
    const help = await f.procs.run(['history', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: locklens history NAME \[--single\] \[--from-revision N \| --all\] \[--json\]/);
    assert.match(help.stdout, /revoked or expired/);
    const usage = await f.procs.run(['--help']);
    assert.match(usage.stdout, /history\s+replay a lock's holds/);
    const missing = await f.procs.run(['history', '--endpoints', f.ep]);
    assert.equal(missing.code, 2, show(missing));
  });
});

describe('locklens history after compaction', () => {
  const f = historyFixture();

  test('the hold in place at the compaction revision is marked as begun before history, and compactedAt says where history begins', async () => {
    const gate = join(f.dir, 'gate');
    const record = join(f.dir, 'record');
    const first = await f.lockRecording('cq', gate, record);
    const second = await f.lockRecording('cq', gate, record);
    // Everything so far is compacted away: the two keys are all that is left of it.
    const revision = JSON.parse(await f.etcd.etcdctl(['endpoint', 'status', '-w', 'json']))[0].Status.header.revision as number;
    await f.etcd.etcdctl(['compact', String(revision)]);

    const before = await f.history('cq');
    assert.equal(before.compactedAt, revision);
    assert.equal(before.fromRevision, revision);
    assert.deepEqual(
      before.holds.map((h) => [h.key, h.beforeHistory, h.acquiredRevision, h.endedRevision, h.waiters]),
      [[first.key, true, revision, null, [second.key]]],
    );
    const text = await f.procs.run(['history', 'cq', '--endpoints', f.ep]);
    assert.match(text.stdout, new RegExp(`^the queue cq/…: revisions ${revision} to \\d+ read \\(history before revision ${revision} was compacted\\), 1 hold\\n`));
    assert.match(text.stdout, /holding since rev \d+ \(held before history\)/);

    writeFileSync(gate, '');
    await Promise.all([first.proc.wait(), second.proc.wait()]);
    assert.deepEqual(readFileSync(record, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]), [first.key, second.key]);
    const after = await f.history('cq');
    assert.equal(after.compactedAt, revision);
    assert.deepEqual(after.holds.map((h) => [h.key, h.beforeHistory]), [[first.key, true], [second.key, false]]);
    assert.equal(after.holds[1].acquiredRevision, after.holds[0].endedRevision);
    await f.assertGoMutexOrder(after);
    assert.deepEqual((await f.history('never/used')).holds, [], 'no history since compaction, and none before: no holds');
  });
});

describe('locklens history on a store without history', () => {
  const f = redisCli();

  test('Redis (--url redis://…) exits 2 with a sentence saying why', async () => {
    const r = await f.procs.run(['history', 'jobs', '--url', f.url()]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.stderr, /^locklens: redis keeps no history of its locks: locklens history replays etcd's revisions\n$/);
  });
});

describe('locklens history over thousands of revisions, read in several windows', () => {
  const f = historyFixture();

  /**
   * Writes, into `long/`, a dense stretch (every revision a change of the queue), a sparse one (other keys' revisions
   * with a change of the queue now and then), and a dense one again, with nested locks' keys among them and a lease
   * revoke that deletes several at one revision. Returns the events written into the range.
   */
  async function writeLongHistory(conn: EtcdConnection): Promise<number> {
    let events = 0;
    const present: Buffer[] = [];
    let n = 0;
    /** Queues a key (one in four a nested lock's: `long/sub/…`), or takes out the oldest but one, or the holder. */
    const step = async () => {
      n++;
      if (present.length > 6 || (present.length > 1 && n % 3 === 0)) {
        const [key] = present.splice(n % 2 === 0 ? 0 : 1, 1);
        await conn.client.kv.deleteRange({ key });
      } else {
        const key = Buffer.from(n % 4 === 0 ? `long/sub/${n.toString(16)}` : `long/${n.toString(16)}`);
        await conn.client.kv.put({ key, value: Buffer.alloc(0) });
        present.push(key);
      }
      events++;
    };
    for (let i = 0; i < 1500; i++) await step();
    // Sparse: 3,000 revisions of other keys, one change of the queue every 300.
    for (let i = 0; i < 3000; i++) {
      if (i % 300 === 0) await step();
      await conn.client.kv.put({ key: Buffer.from(`other/${i % 50}`), value: Buffer.from('x') });
    }
    // One revoke, one revision, three keys of the queue deleted together.
    const { ID } = await conn.client.leaseClient.leaseGrant({ TTL: 600 });
    const leased = ['long/r1', 'long/sub/r2', 'long/r3'].map((k) => Buffer.from(k));
    for (const key of leased) await conn.client.kv.put({ key, value: Buffer.alloc(0), lease: ID });
    await conn.client.leaseClient.leaseRevoke({ ID });
    events += 2 * leased.length;
    for (let i = 0; i < 1500; i++) await step();
    return events;
  }


  test('every event read once; the holder at sampled revisions is the Go Mutex one, nested keys included', async () => {
    const conn = await f.connect();
    const written = await writeLongHistory(conn);
    const doc = await f.history('long');
    assert.ok(doc.toRevision - doc.fromRevision > 6000, `${doc.toRevision - doc.fromRevision} revisions: several windows`);
    const replayed = await new EtcdHistory(conn).replay(Buffer.from('long'));
    assert.equal(replayed.events, written, 'every put and delete of the range, no other and none twice');
    assert.equal(replayed.endedOnSilence, false);
    assert.equal(doc.holds.length, replayed.holds.length);
    assert.ok(doc.holds.some((h) => h.key.startsWith('long/sub/')), 'a nested lock’s key held the queue when it came first');
    // Holds follow one another: each one's start is after the previous one's end.
    doc.holds.forEach((h, i) => i && assert.ok(h.acquiredRevision >= doc.holds[i - 1].endedRevision!, `hold ${i}`));
    // Every 20th revision, and the revisions around each handover.
    const sample = new Set<number>();
    for (let r = doc.fromRevision; r <= doc.toRevision; r += 20) sample.add(r);
    for (const h of doc.holds) for (const r of [h.acquiredRevision - 1, h.acquiredRevision, (h.endedRevision ?? 0) - 1]) if (r >= 1) sample.add(r);
    await f.assertGoMutexOrder(doc, sample);
  });
});

describe('locklens history: a nested lock is part of the queue above it, as a Go Mutex sees it', () => {
  const f = historyFixture();

  test('etcdctl lock app waits for the key of etcdctl lock app/db, and the replay of app says it held', async () => {
    const gate = join(f.dir, 'gate');
    const record = join(f.dir, 'record');
    const nested = await f.lockRecording('app/db', gate, record);
    const outer = await f.lockRecording('app', gate, record);
    writeFileSync(gate, '');
    await Promise.all([nested.proc.wait(), outer.proc.wait()]);
    // etcdctl (Go's concurrency.Mutex) let `app` in only once the nested key went: the order they wrote in.
    assert.deepEqual(readFileSync(record, 'utf8').trim().split('\n').map((l) => l.split(' ')[0]), [nested.key, outer.key]);
    const doc = await f.history('app');
    assert.deepEqual(doc.holds.map((h) => h.key), [nested.key, outer.key]);
    assert.equal(doc.holds[1].acquiredRevision, doc.holds[0].endedRevision);
    await f.assertGoMutexOrder(doc);
  });
});

describe('locklens history: how far back it reads', () => {
  const f = historyFixture();

  test('a span above the limit is refused before anything is read; --from-revision starts later and says so; --all reads it all', async () => {
    const conn = await f.connect();
    for (let i = 0; i < 40; i++) await conn.client.kv.put({ key: Buffer.from(`spanned/${(0x100 + i).toString(16)}`), value: Buffer.alloc(0) });
    for (let i = 0; i < 38; i++) await conn.client.kv.deleteRange({ key: Buffer.from(`spanned/${(0x100 + i).toString(16)}`) });
    const history = new EtcdHistory(conn);
    const span = await history.span(Buffer.from('spanned'));
    assert.equal(span.oldest, 1);
    assert.ok(span.current >= 79, JSON.stringify(span));
    await assert.rejects(history.replay(Buffer.from('spanned'), { maxRevisions: 50 }), (e) => {
      assert.ok(isLockLensError(e, 'INVALID_ARGUMENT'), String(e));
      assert.match(e.message, new RegExp(`keeps ${span.current - 1} revisions \\(1 to ${span.current}\\), more than 50: .* --from-revision N \\(e\\.g\\. ${span.current - 50}\\), or all of them with --all`));
      return true;
    });
    // Each key held in turn as the one before it went, all but the last: 39 holds.
    assert.equal((await history.replay(Buffer.from('spanned'), { maxRevisions: Infinity })).holds.length, 39);

    // From the revision the 30th key went: its holds are not read, the one in place then held before.
    const from = span.current - 8;
    const doc = await f.history('spanned', ['--from-revision', String(from)]);
    assert.equal(doc.fromRevision, from);
    assert.equal(doc.skippedBefore, from);
    assert.equal(doc.compactedAt, null);
    assert.equal(doc.holds[0].beforeHistory, true);
    assert.equal(doc.holds[0].acquiredRevision, from);
    assert.equal(doc.holds[0].waiterCount, 9, 'the ten keys present then: one holds, nine wait');
    assert.equal(doc.holds.length, 9, 'the one in place and the eight after it');
    await f.assertGoMutexOrder(doc);
    const text = await f.procs.run(['history', 'spanned', '--endpoints', f.ep, '--from-revision', String(from)]);
    assert.match(text.stdout, new RegExp(`^the queue spanned/…: revisions ${from} to ${doc.toRevision} read \\(history before revision ${from} not read: --from-revision\\), 9 holds\\n`));
    assert.equal((await f.history('spanned', ['--all'])).holds.length, 39);

    for (const bad of [['--from-revision', '0'], ['--from-revision', 'x'], ['--from-revision', '3', '--all'], ['--from-revision', String(span.current + 1000)]]) {
      const r = await f.procs.run(['history', 'spanned', '--endpoints', f.ep, ...bad]);
      assert.equal(r.code, 2, `${bad.join(' ')}: ${show(r)}`);
    }
  });
});
