import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RenewingHold } from '../../src/core/redis/acquire/hold';
import type { LockLensError } from '../../src/core/errors';

/** A hold whose store is a script: renewals answer only when the test says, unlocks are counted. */
class ScriptedHold extends RenewingHold {
  renewals: ((ours: boolean) => void)[] = [];
  unlocks = 0;

  constructor(ttlMs: number) {
    super(Buffer.from('job'), Buffer.from('job'), 'token', ttlMs, Date.now() + ttlMs);
  }

  protected renew(): Promise<boolean> {
    return new Promise((resolve) => this.renewals.push(resolve));
  }

  protected unlock(): Promise<boolean> {
    this.unlocks++;
    return Promise.resolve(true);
  }
}

test('a renewal that never answers does not keep the hold: it is lost at the TTL, and what may be left is deleted', async () => {
  const hold = new ScriptedHold(300);
  const error = await new Promise<LockLensError>((resolve) => hold.onDidLose(resolve));
  assert.equal(error.code, 'LOCK_LOST');
  assert.match(error.message, /could not renew it before its TTL ran out \(Redis did not answer\)/);
  assert.equal(hold.renewals.length, 1, 'the renewal was sent and is still pending');
  assert.equal(hold.unlocks, 1, 'a late renewal would keep the key ours: it is compare-and-deleted');
  // The renewal answering late changes nothing: lost stays lost, and release has nothing to do.
  hold.renewals[0](true);
  await new Promise((r) => setImmediate(r));
  assert.equal(hold.lost, error);
  assert.equal(await hold.release(), false);
  assert.equal(hold.unlocks, 1);
});

test('a renewal that answers keeps the hold past its first TTL; release unlocks once', async (t) => {
  // Mocked time: with a real 300 ms TTL, a loaded machine that stalled this process past it lost the hold, and the test
  // then waited for a renewal that never came.
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const hold = new ScriptedHold(3000);
  const lost: LockLensError[] = [];
  hold.onDidLose((e) => lost.push(e));
  // Four renewals answered in a row, one every TTL/3: 4 s, past the first TTL, each one moving the deadline on.
  for (let i = 0; i < 4; i++) {
    t.mock.timers.tick(1000);
    await new Promise((r) => setImmediate(r));
    assert.equal(hold.renewals.length, i + 1, `renewal ${i + 1} sent`);
    hold.renewals[i](true);
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(lost, []);
  assert.equal(await hold.release(), true);
  assert.equal(hold.unlocks, 1);
});

test('a renewal that fails is tried again soon, not a whole TTL/3 later, and one that then answers keeps the hold', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const failing = new (class extends ScriptedHold {
    calls = 0;
    protected override renew(): Promise<boolean> {
      this.calls++;
      return this.calls === 1 ? Promise.reject(new Error('connection reset')) : super.renew();
    }
  })(3000);
  const lost: LockLensError[] = [];
  failing.onDidLose((e) => lost.push(e));
  t.mock.timers.tick(1000); // the first renewal, at TTL/3: it fails
  await new Promise((r) => setImmediate(r));
  assert.equal(failing.calls, 1);
  t.mock.timers.tick(250); // retried after 250 ms, not at 2000 ms
  assert.equal(failing.calls, 2);
  failing.renewals[0](true);
  await new Promise((r) => setImmediate(r));
  t.mock.timers.tick(1900); // past the first TTL (3000 ms): the retry's success moved the deadline on
  assert.deepEqual(lost, []);
  assert.equal(await failing.release(), true);
});
