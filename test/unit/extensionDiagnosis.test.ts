import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LockWatch } from '../../src/core/backend';
import { Emitter } from '../../src/core/emitter';
import type { LeaseInfo } from '../../src/core/leaseInfo';
import { LockClock } from '../../src/core/lockHealth';
import type { ChangeSet, LockState } from '../../src/core/lockState';
import { Diagnoses, type DiagnosedConnection } from '../../src/extension/diagnosis';
import { lockOf } from '../harness/waitLocks';

/** A connection whose watch's sync resolves when the test says. */
class FakeConnection implements DiagnosedConnection {
  readonly clock = new LockClock();
  syncs = 0;
  watch: LockWatch | undefined = this.newWatch();
  constructor(readonly name: string) {}
  newWatch(): LockWatch {
    return { sync: async () => void this.syncs++ } as unknown as LockWatch;
  }
}

function setup() {
  const locks = new Emitter<{ connection: FakeConnection; changes: ChangeSet }>();
  const leases = new Emitter<{ connection: FakeConnection; infos: readonly LeaseInfo[] }>();
  const changed = new Emitter<void>();
  const c = new FakeConnection('zk');
  const diagnoses = new Diagnoses({ onDidChangeLocks: locks.event, onDidChangeLeases: leases.event, onDidChange: changed.event, all: () => [c] }, 5);
  const reports: string[] = [];
  diagnoses.onDidChange(({ report }) => reports.push(`+${report.appeared.length} -${report.cleared.length}`));
  const send = (changedLocks: LockState[], removed: string[] = []) => locks.fire({ connection: c, changes: { changed: changedLocks, removed, revision: 0, resynced: false } as ChangeSet });
  return { c, diagnoses, reports, send };
}

/**
 * Runs the checks the diagnosis scheduled until none is left: its timers are the test's (mocked), so a busy machine
 * cannot make a check late and the test wrong. Each turn fires the due timer, then lets the check's sync resolve.
 */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 10; turn++) {
    mock.timers.tick(5);
    await new Promise((r) => setImmediate(r));
  }
}
const deadlock = () => [lockOf('/locks/a', 's1', ['s2']), lockOf('/locks/b', 's2', ['s1'])];

describe('the diagnosis of each connection', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('a cycle is confirmed only by a second read after a sync, told once, and flagged on its locks', async () => {
    const { c, diagnoses, reports, send } = setup();
    send(deadlock());
    assert.equal(diagnoses.of(c)!.cycles.length, 0, 'nothing confirmed from the change set itself');
    await settle();
    assert.ok(c.syncs >= 2, 'each read came after a sync of the watch');
    assert.deepEqual(reports, ['+1 -0']);
    const lock = deadlock()[0];
    const { deadlocks } = diagnoses.findings(c, lock, []);
    assert.deepEqual(deadlocks[0].members.map((m) => `${m.owner} ${m.holds.name} ${m.waitsIn.name}`), ['s1 /locks/a /locks/b', 's2 /locks/b /locks/a']);
    send(deadlock());
    await settle();
    assert.deepEqual(reports, ['+1 -0'], 'not told again while it lasts');
    diagnoses.dispose();
  });

  test('a cycle gone before its second read is never told; one that clears is said cleared', async () => {
    const { diagnoses, reports, send } = setup();
    send(deadlock());
    send([lockOf('/locks/a', 's1', []), lockOf('/locks/b', 's2', [])]);
    await settle();
    assert.deepEqual(reports, []);
    send(deadlock());
    await settle();
    send([], [lockOf('/locks/a', null).id]);
    await settle();
    assert.deepEqual(reports, ['+1 -0', '+0 -1']);
    diagnoses.dispose();
  });

  test('a new watch starts over: what was confirmed is cleared, and must be confirmed again', async () => {
    const { c, diagnoses, reports, send } = setup();
    send(deadlock());
    await settle();
    c.watch = c.newWatch();
    send(deadlock());
    assert.deepEqual(reports, ['+1 -0', '+0 -1']);
    await settle();
    assert.deepEqual(reports, ['+1 -0', '+0 -1', '+1 -0']);
    diagnoses.dispose();
  });
});
