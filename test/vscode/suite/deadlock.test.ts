import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../../src/extension/extension';
import { CHECK_DELAY_MS } from '../../../src/extension/diagnosis';
import { eventually } from '../../harness/etcd';
import { KazooLock } from '../../harness/kazoo';
import { startZooKeeper, type ZooKeeperServer } from '../../harness/zookeeper';
import { storeSuite } from './fixture';
import { KazooPair } from './kazooPair';

/**
 * Deadlock detection as the user meets it (issue 22), against a real ZooKeeper and two real kazoo sessions each holding
 * one lock and waiting for the other's: both locks' rows flagged with the cycle in their tooltip, one notification
 * however many change sets follow, its Force Release… offering both holds with what each frees, and the pick released
 * through Force Release so that the other session gets its lock and the flags go. A plain queue is no deadlock.
 */
describe('Deadlock detection against a real ZooKeeper', function () {
  const CONNECTION = 'e2e-deadlock';
  const suite = storeSuite(CONNECTION);
  const { sync, lockRow } = suite;
  let server: ZooKeeperServer;
  let api: LockLensApi;

  const hosts = () => `127.0.0.1:${server.port}`;
  const notices = () => suite.stubs.shown.filter((s) => s.kind === 'warning' && s.message.startsWith('Deadlock on'));
  const drawn = (name: string) => {
    const node = lockRow(name)!;
    const item = api.tree.getTreeItem(node);
    return { node, item, icon: (item.iconPath as vscode.ThemeIcon | undefined)?.id };
  };
  const tooltip = (name: string) => {
    const { node, item } = drawn(name);
    // Owner and lock names are written untrusted: escaped, their spaces non-breaking.
    return (api.tree.resolveTreeItem(item, node).tooltip as vscode.MarkdownString).value.replace(/\\/g, '').replace(/&nbsp;/g, ' ');
  };
  /** Past the diagnosis's two synced reads: what it would tell, it has told. */
  const settle = () => new Promise((r) => setTimeout(r, 3 * CHECK_DELAY_MS));

  before(async () => {
    server = await startZooKeeper();
    api = await suite.connect({ store: 'zookeeper', endpoints: [server.url], prefixes: ['/dl'] });
  });

  after(async () => {
    await server?.dispose();
  });

  it('two sessions each holding one lock and waiting for the other\'s: both rows flagged with the cycle, told once; Force Release… frees the pick and the flags clear', async () => {
    // The notice's answer waits until the flags and the "once" are checked; then it picks Force Release….
    let answerNotice!: (answer: string) => void;
    const noticeAnswer = new Promise<string>((resolve) => (answerNotice = resolve));
    let offered: readonly (vscode.QuickPickItem & { choice?: { owner: string } })[] = [];
    suite.stubs
      .warnings((message, items) => (message.startsWith('Deadlock on') ? noticeAnswer : message.startsWith('Force-release') ? items[0] : undefined))
      .picks((items) => ((offered = items), items.find((i) => i.label.startsWith('Release /dl/b'))));

    const one = suite.peer(new KazooPair(hosts(), '/dl/a', '/dl/b', 'one'));
    const two = suite.peer(new KazooPair(hosts(), '/dl/b', '/dl/a', 'two'));
    const [s1, s2] = await Promise.all([one.holdsFirst(), two.holdsFirst()]);
    one.waitForSecond();
    two.waitForSecond();
    await Promise.all([one.until(['waiting']), two.until(['waiting'])]);

    await eventually(() => notices().length === 1, 20_000, 'the deadlock notification');
    for (const name of ['/dl/a', '/dl/b']) {
      await eventually(() => drawn(name).icon === 'error', 10_000, `${name} flagged`);
      const text = tooltip(name);
      assert.match(text, /Deadlock/, text);
      for (const part of [`session ${s1} holds /dl/a and waits for /dl/b`, `session ${s2} holds /dl/b and waits for /dl/a`]) assert.ok(text.includes(part), `${part} in ${text}`);
    }
    const notice = notices()[0].message;
    assert.ok(notice.includes(CONNECTION) && notice.includes(`session ${s1}`) && notice.includes(`session ${s2}`), notice);

    // More change sets (a third session queues in /dl/a) and more synced reads: the cycle is not told again.
    await suite.peer(new KazooLock(hosts(), '/dl/a', { identifier: 'three', sessionSeconds: 10 })).until(['waiting']);
    await eventually(async () => (await sync(), suite.memberRows('/dl/a').length === 3), 10_000, 'the third session queued');
    await settle();
    assert.equal(notices().length, 1, 'told once');

    answerNotice('Force Release…');
    await one.until(['holds-both'], 20_000);
    const expected = [
      [`Release /dl/a from session ${s1}`, `Lets session ${s2} take /dl/a`],
      [`Release /dl/b from session ${s2}`, `Lets session ${s1} take /dl/b`],
    ];
    assert.deepEqual(offered.map((i) => [i.label, i.detail]).sort(), expected, 'one choice per hold of the cycle, each saying what it frees');
    const confirmation = suite.stubs.shown.find((s) => s.kind === 'warning' && s.message.startsWith('Force-release'));
    assert.ok(confirmation?.message.includes('/dl/b'), confirmation?.message);
    for (const name of ['/dl/a', '/dl/b']) {
      await eventually(async () => (await sync(), drawn(name).icon !== 'error'), 15_000, `${name} no longer flagged`);
      assert.doesNotMatch(tooltip(name), /Deadlock/);
    }
    assert.equal(api.diagnoses.of(api.registry.get(CONNECTION)!)?.deadlocks, 0);
    assert.equal(notices().length, 1);
  });

  it('a plain queue on one lock is no deadlock: no flag, no notification', async () => {
    await suite.peer(new KazooLock(hosts(), '/dl/q', { identifier: 'q-holder', sessionSeconds: 10 })).until(['acquired']);
    await suite.peer(new KazooLock(hosts(), '/dl/q', { identifier: 'q-waiter', sessionSeconds: 10 })).until(['waiting']);
    await eventually(async () => (await sync(), suite.memberRows('/dl/q').length === 2), 10_000, 'holder and waiter in the tree');
    await settle();
    assert.notEqual(drawn('/dl/q').icon, 'error');
    assert.doesNotMatch(tooltip('/dl/q'), /Deadlock/);
    assert.equal(notices().length, 0);
    assert.deepEqual(api.diagnoses.of(api.registry.get(CONNECTION)!)?.cyclesOf(api.tree.lock(lockRow('/dl/q')!)!.id), []);
  });
});
