import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { keyId } from '../../../src/core/keys';
import { HistoryRecorder } from '../../../src/core/recording/recorder';
import { HistoryStore } from '../../../src/core/recording/historyStore';
import type { LockLensApi } from '../../../src/extension/extension';
import { eventually, startEtcd, type EtcdServer } from '../../harness/etcd';
import { eventsOf } from '../../harness/recordedEvents';
import { activateWithConnection, removeConnectionSetting } from './fixture';
import { WindowStubs } from './windowStubs';

/**
 * The history a `locklens serve` recorded, opened in the Lock History view of a real VS Code: Open Recorded History…
 * asks for the data directory, remembers it, and the view shows the recorded holds of the lock it shows (read by the
 * extension's own bundle, with the SQLite WebAssembly it ships), beside what the window saw live.
 */
describe('Recorded history in the Lock History view', function () {
  const CONNECTION = 'recorded';
  const NAME = '/rec/jobs';
  const T0 = Date.now() - 3600_000;
  let etcd: EtcdServer;
  let api: LockLensApi;
  let stubs: WindowStubs;
  let dir: string;

  before(async () => {
    etcd = await startEtcd();
    api = await activateWithConnection(CONNECTION, etcd.endpoint, ['/rec/']);
    dir = mkdtempSync(join(tmpdir(), 'locklens-recorded-'));
    const recorder = await HistoryRecorder.open(join(dir, 'data'));
    const jobs = eventsOf('prod-etcd', NAME);
    recorder.record(jobs.holdStarted('/rec/jobs/a', T0, { owner: 'worker-a', token: 7, waitedMs: 250 }), 'etcd');
    recorder.record(jobs.holdEnded('/rec/jobs/a', T0 + 1500, 'released', 1500, { owner: 'worker-a', token: 7 }), 'etcd');
    recorder.record(jobs.holdStarted('/rec/jobs/b', T0 + 2000, { owner: 'worker-b', token: 9 }), 'etcd');
    await recorder.flush();
    await HistoryStore.noteForceRelease(join(dir, 'data'), { connection: 'prod-etcd', lock: NAME, member: '/rec/jobs/b', owner: 'worker-b', by: 'alice', at: T0 + 5000 });
    recorder.record(jobs.holdEnded('/rec/jobs/b', T0 + 5100, 'released', 3100, { owner: 'worker-b', token: 9 }), 'etcd');
    await recorder.close();
  });

  afterEach(() => stubs?.restore());

  after(async () => {
    await vscode.workspace.getConfiguration('locklens').update('recordedHistoryDir', undefined, vscode.ConfigurationTarget.Global);
    await removeConnectionSetting(CONNECTION);
    await etcd?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The rows of one section of the view, as drawn. */
  const section = (id: string) => {
    const node = api.history.getChildren().find((n) => api.history.getTreeItem(n).id === id);
    return node && api.history.getChildren(node).map((n) => api.history.getTreeItem(n));
  };

  it('Open Recorded History… remembers the data directory, and the view lists the lock`s recorded holds, newest first', async () => {
    // A Go Mutex's key: the lock's name, then its lease in hex.
    const lease = /lease ([0-9a-f]+) granted/.exec(await etcd.etcdctl(['lease', 'grant', '600']))![1];
    await etcd.etcdctl(['put', '--lease', lease, `${NAME}/${lease}`, '']);
    const lockId = keyId(Buffer.from(NAME));
    await eventually(() => api.registry.get(CONNECTION)?.watch?.lock(lockId), 15_000, 'the lock watched');
    await vscode.commands.executeCommand('locklens.showHistory', { connection: CONNECTION, lockId });
    assert.equal(section('recorded'), undefined, 'no section before a directory is chosen');

    stubs = new WindowStubs().messages().openDialogs(() => [vscode.Uri.file(join(dir, 'data'))]);
    await vscode.commands.executeCommand('locklens.openRecordedHistory');
    assert.deepEqual(stubs.shown.map((s) => s.kind), ['open']);
    assert.equal(vscode.workspace.getConfiguration('locklens').get('recordedHistoryDir'), join(dir, 'data'));

    const rows = await eventually(() => {
      const items = section('recorded');
      return items && items.length === 2 && items[0].label !== undefined ? items : undefined;
    }, 15_000, 'the recorded holds drawn');
    assert.deepEqual(
      rows.map((r) => [r.label, r.description]),
      [
        ['worker-b', 'held 3.1s · force-released by alice · token 9'],
        ['worker-a', 'held 1.5s · released · token 7 · waited 250 ms'],
      ],
    );
    // Untrusted text is escaped for Markdown (spaces as &nbsp;, parentheses with a backslash).
    assert.match((rows[0].tooltip as vscode.MarkdownString).value, /Connection: prod-etcd(&nbsp;| )\\?\(etcd\\?\)/);
    assert.deepEqual(
      api.history.getChildren().map((n) => api.history.getTreeItem(n).id),
      ['figures', 'live', 'past', 'recorded'],
      'beside what the window saw and what etcd can replay',
    );
  });

  it('a directory without a recorded history says so in the view', async () => {
    const empty = join(dir, 'empty');
    await vscode.workspace.getConfiguration('locklens').update('recordedHistoryDir', empty, vscode.ConfigurationTarget.Global);
    const rows = await eventually(() => {
      const items = section('recorded');
      return items?.length === 1 && /^Could not read/.test(String(items[0].label)) ? items : undefined;
    }, 15_000, 'the error drawn');
    assert.match(String(rows[0].label), /holds no recorded history \(no .*history\.db\)/);
  });
});
