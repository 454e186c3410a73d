import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, afterEach, before, beforeEach, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { LockStats } from '../../../src/core/lockStats';
import { keyId } from '../../../src/core/keys';
import type { LockLensApi } from '../../../src/extension/extension';
import { Procs, type Proc } from '../../harness/cli';
import { eventually, startEtcd, type EtcdServer } from '../../harness/etcd';
import { activateWithConnection, isLockNode, removeConnectionSetting } from './fixture';
import { WindowStubs } from './windowStubs';

/**
 * Contention history in a real VS Code: what LockLens records of `etcdctl lock` runs while it watches (figures,
 * recent holds, the lock's tooltip), what it replays from etcd's MVCC history of runs it never saw, the incident
 * report on the clipboard, and the records kept in global storage.
 */
describe('Lock history against a real etcd', function () {
  let etcd: EtcdServer;
  let api: LockLensApi;
  let procs: Procs;
  let stubs: WindowStubs;
  const CONNECTION = 'hist';

  const leasesUnder = async (name: string) =>
    (await etcd.etcdctl(['get', '--prefix', `${name}/`, '--keys-only'])).split('\n').filter((l) => l).map((k) => k.slice(k.lastIndexOf('/') + 1));

  /** `etcdctl lock NAME sleep SECONDS`, once its key is in etcd (so that runs queue in the order started); its lease. */
  async function etcdctlLock(name: string, seconds: number): Promise<{ proc: Proc; lease: string }> {
    const before = new Set(await leasesUnder(name));
    const proc = procs.etcdctl(['lock', name, 'sleep', String(seconds)]);
    const lease = await eventually(async () => (await leasesUnder(name)).find((l) => !before.has(l)), 10_000, `etcdctl lock ${name} queued`);
    return { proc, lease };
  }

  const lockRow = (name: string) => {
    const connection = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    for (const prefix of api.tree.getChildren(connection)) {
      const row = api.tree.getChildren(prefix).find((n) => isLockNode(n) && api.tree.lock(n)?.name.toString() === name);
      if (row) return row;
    }
    return undefined;
  };

  before(async () => {
    etcd = await startEtcd();
    api = await activateWithConnection(CONNECTION, etcd.endpoint, ['/hist/']);
  });

  after(async () => {
    await removeConnectionSetting(CONNECTION);
    await etcd?.dispose();
  });

  beforeEach(() => {
    procs = new Procs(etcd.endpoint);
    stubs = new WindowStubs().messages();
  });

  afterEach(async () => {
    stubs.restore();
    await procs.dispose();
  });

  it('records the holds and waits of etcdctl lock runs it watched: figures, recent holds in order, the tooltip', async () => {
    const runs = [await etcdctlLock('/hist/jobs', 1), await etcdctlLock('/hist/jobs', 1), await etcdctlLock('/hist/jobs', 1)];
    await Promise.all(runs.map((r) => r.proc.exited));
    const last = await etcdctlLock('/hist/jobs', 120);
    const lockId = keyId(Buffer.from('/hist/jobs'));
    const stats = () => api.records.stats;
    await eventually(() => stats().holds(CONNECTION, lockId).length === 4, 10_000, 'four holds recorded');
    const holds = stats().holds(CONNECTION, lockId);
    assert.deepEqual(holds.map((h) => h.owner), [...runs.map((r) => r.lease), last.lease], 'the holds in the order etcdctl took the lock');
    assert.ok(holds.every((h) => h.acquiredExact), 'each was seen from its start');
    assert.equal(holds[3].endedAt, null, 'the last still holds');
    await eventually(() => stats().holds(CONNECTION, lockId).slice(0, 3).every((h) => h.end !== null), 10_000, 'how each ended is settled');
    const figures = stats().figures(CONNECTION, lockId)!;
    assert.equal(figures.holds, 4);
    assert.equal(figures.hold?.count, 3, 'three holds seen from start to end');
    assert.equal(figures.wait?.count, 2, 'two runs waited behind another');
    assert.ok(figures.handoffsPerMinute > 0);

    const row = lockRow('/hist/jobs')!;
    const item = api.tree.resolveTreeItem(api.tree.getTreeItem(row), row);
    assert.match((item.tooltip as vscode.MarkdownString).value, /4 holds seen · hold p50 /);
  });

  it('Replay History rebuilds from etcd the holds of runs LockLens never watched, with revisions and waiters', async () => {
    // Each run is queued before the one ahead of it has finished: the third waits when the second takes over.
    const runs = [await etcdctlLock('/past/jobs', 1), await etcdctlLock('/past/jobs', 1)];
    const holder = await etcdctlLock('/past/jobs', 120);
    await Promise.all(runs.map((r) => r.proc.exited));
    const connectionNode = api.tree.getChildren().find((n) => n.connection.name === CONNECTION)!;
    await vscode.commands.executeCommand('locklens.addPrefix', connectionNode, '/past/');
    await eventually(() => !!lockRow('/past/jobs'), 10_000, 'the lock in the tree');
    await vscode.commands.executeCommand('locklens.replayHistory', lockRow('/past/jobs'));
    const target = api.history.target!;
    assert.equal(target.name.toString(), '/past/jobs');
    const replayed = api.history.replay(target)!;
    assert.ok(replayed, JSON.stringify(stubs.shown));
    assert.deepEqual(replayed.holds.map((h) => h.lease), [...runs.map((r) => r.lease), holder.lease]);
    assert.equal(replayed.compactedAt, null);
    assert.equal(replayed.holds[1].waiters.length, 1, 'the third run waited when the second took it');
    assert.equal(replayed.holds[2].endedRevision, null);
    // The view shows them newest first under its third section.
    const [, , past] = api.history.getChildren();
    const labels = api.history.getChildren(past).map((n) => api.history.getTreeItem(n).label);
    assert.ok(labels.includes(`/past/jobs/${runs[0].lease}`), JSON.stringify(labels));
  });

  it('a compacted history is reported as such in the view and the report, never silently shorter', async () => {
    const first = await etcdctlLock('/past/compacted', 1);
    await first.proc.exited;
    const holder = await etcdctlLock('/past/compacted', 120);
    const revision = JSON.parse(await etcd.etcdctl(['endpoint', 'status', '-w', 'json']))[0].Status.header.revision as number;
    await etcd.etcdctl(['compact', String(revision)]);
    await eventually(() => !!lockRow('/past/compacted'), 10_000, 'the lock in the tree');
    await vscode.commands.executeCommand('locklens.replayHistory', lockRow('/past/compacted'));
    const replayed = api.history.replay(api.history.target!)!;
    assert.equal(replayed.compactedAt, revision);
    assert.deepEqual(replayed.holds.map((h) => [h.lease, h.beforeHistory]), [[holder.lease, true]], 'the first run is before history: not shown, not made up');
    const [, , past] = api.history.getChildren();
    const labels = api.history.getChildren(past).map((n) => String(api.history.getTreeItem(n).label));
    assert.ok(labels.includes(`History before revision ${revision} was compacted: older holds are not shown.`), JSON.stringify(labels));
    await vscode.commands.executeCommand('locklens.copyIncidentReport', lockRow('/past/compacted'));
    assert.match(await vscode.env.clipboard.readText(), new RegExp(`History before revision ${revision} was compacted`));
  });

  it('Copy Incident Report puts the lock in Markdown on the clipboard: holder, figures, replayed holds', async () => {
    await vscode.commands.executeCommand('locklens.copyIncidentReport', lockRow('/past/jobs'));
    const report = await vscode.env.clipboard.readText();
    const [holder] = await leasesUnder('/past/jobs');
    assert.match(report, /^# /m);
    assert.ok(report.includes('/past/jobs'), report);
    assert.ok(report.includes(holder), report);
    assert.match(report, /## Replayed from the store's history \(revisions 1 to \d+\)/, 'the replayed holds are in it');
    assert.match(report, new RegExp(`\\| \`/past/jobs/${holder}\` \\| \`${holder}\` \\| \\d+ \\| \\d+ \\| holding \\|`), report);
    assert.ok(stubs.shown.some((m) => m.kind === 'info' && m.message.includes('incident report')), JSON.stringify(stubs.shown));
  });

  it('the records are saved to global storage and read back whole', async () => {
    await api.records.save();
    assert.ok(existsSync(api.records.file.fsPath));
    const read = LockStats.fromJSON(JSON.parse(readFileSync(api.records.file.fsPath, 'utf8')));
    const lockId = keyId(Buffer.from('/hist/jobs'));
    assert.deepEqual(read.holds(CONNECTION, lockId), api.records.stats.holds(CONNECTION, lockId));
  });
});
