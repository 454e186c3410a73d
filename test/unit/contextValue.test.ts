import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Capabilities } from '../../src/core/backend';
import type { LockMember } from '../../src/core/lockState';
import type { ConnectionState } from '../../src/extension/connections';
import { connectionContext, lockContext, memberContext, PREFIX_CONTEXT } from '../../src/extension/tree/contextValue';
import { contextMenuCommands, contextMenuEntries, viewItemRegex, type MenuManifest } from '../harness/contextMenus';
import { repoRoot } from '../harness/codeServer';

const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as MenuManifest;

const ETCD: Capabilities = { waiters: true, fencingTokens: true, ttl: true, owner: 'lease', queuedAcquire: true, readWriteLocks: false };
const REDIS: Capabilities = { ...ETCD, fencingTokens: false, owner: 'token' };
const ZOOKEEPER: Capabilities = { ...ETCD, ttl: false, owner: 'session' };
const SQL: Capabilities = { ...ETCD, fencingTokens: false, ttl: false, owner: 'connection' };

function member(o: Partial<LockMember>): LockMember {
  return { key: Buffer.from('/locks/jobs/694d'), convention: 'go-mutex', owner: '', expiresWith: 'nothing', lease: '', token: null, holds: null, valuePreview: Buffer.alloc(0), valueSize: 0, ...o };
}

const etcdMember = member({ owner: '694d', expiresWith: 'lease', lease: '694d', token: 12 });
const redisToken = member({ convention: 'redis-token', owner: 'f3a9', expiresWith: 'ttl', lease: 'lock:jobs' });
const zkNode = member({ convention: 'curator-mutex', owner: '0x1000', token: 7 });
const sqlSession = member({ convention: 'pg-advisory', owner: '4242', expiresWith: 'connection', lease: '4242' });

const STATES: ConnectionState[] = ['disconnected', 'connecting', 'connected', 'reconnecting', 'error'];

/** A row of every kind the Locks view draws, in every state a menu tells apart. */
const ROWS: Record<string, string> = {
  ...Object.fromEntries(STATES.map((s) => [`connection ${s}`, connectionContext(s, false)])),
  'connection, store not installed': connectionContext('disconnected', true),
  prefix: PREFIX_CONTEXT,
  'queue lock': lockContext('queue', false),
  'acquirable read/write lock': lockContext('readwrite', true),
  'etcd holder': memberContext(etcdMember, true, false, ETCD),
  'etcd holder, own': memberContext(etcdMember, true, true, ETCD),
  'etcd waiter': memberContext(etcdMember, false, false, ETCD),
  'redis token holder': memberContext(redisToken, true, false, REDIS),
  'redis token holder, own': memberContext(redisToken, true, true, REDIS),
  'redis waiter': memberContext(redisToken, false, false, REDIS),
  'zookeeper holder': memberContext(zkNode, true, false, ZOOKEEPER),
  'sql session holder': memberContext(sqlSession, true, false, SQL),
};

const LOCK_ROW = ['locklens.copyIncidentReport', 'locklens.openTimeline', 'locklens.showHistory'];
const CONNECTION_ROW = ['locklens.addPrefix', 'locklens.editConnection', 'locklens.refresh', 'locklens.removeConnection'];
const sorted = (...lists: string[][]) => lists.flat().sort();

describe('tree rows: contextValues as a base and order-free flags', () => {
  test('each flag says one fact', () => {
    assert.equal(ROWS['connection reconnecting'], 'connection+reconnecting');
    assert.equal(ROWS['connection, store not installed'], 'connection+notInstalled', 'no state: it neither connects nor disconnects');
    assert.equal(ROWS['acquirable read/write lock'], 'lock+readwrite+acquirable');
    assert.equal(ROWS['queue lock'], 'lock+queue');
    assert.equal(ROWS['etcd holder'], 'member+leased+other+holder+token');
    assert.equal(ROWS['etcd holder, own'], 'member+leased+own+holder+token');
    assert.equal(ROWS['etcd waiter'], 'member+leased+other+token');
    assert.equal(ROWS['redis token holder'], 'member+other+holder+owner', 'a Redis key can expire but not be revoked: not leased');
    assert.equal(ROWS['redis waiter'], 'member+other+owner');
    assert.equal(ROWS['zookeeper holder'], 'member+other+holder+token+owner');
  });

  test('rows offer the same menus as before', () => {
    const menus = (row: string, readOnly = false) => contextMenuCommands(manifest, ROWS[row], readOnly);
    for (const s of ['connecting', 'connected', 'reconnecting']) assert.deepEqual(menus(`connection ${s}`), sorted(CONNECTION_ROW, ['locklens.disconnect']), s);
    for (const s of ['disconnected', 'error']) assert.deepEqual(menus(`connection ${s}`), sorted(CONNECTION_ROW, ['locklens.connect']), s);
    assert.deepEqual(menus('connection, store not installed'), sorted(CONNECTION_ROW, ['locklens.installStoreSupport']));
    assert.deepEqual(menus('prefix'), ['locklens.removePrefix']);
    assert.deepEqual(menus('queue lock'), LOCK_ROW);
    assert.deepEqual(menus('acquirable read/write lock'), sorted(LOCK_ROW, ['locklens.acquireLock']));
    assert.deepEqual(menus('acquirable read/write lock', true), LOCK_ROW, 'read-only: no Acquire');
    const leased = ['locklens.copyFencingToken', 'locklens.copyKey', 'locklens.copyLeaseId', 'locklens.revokeLease', 'locklens.showLeaseDetails'];
    assert.deepEqual(menus('etcd holder'), sorted(LOCK_ROW, leased, ['locklens.forceRelease']));
    assert.deepEqual(menus('etcd holder, own'), sorted(LOCK_ROW, leased, ['locklens.releaseLock']));
    assert.deepEqual(menus('etcd waiter'), sorted(LOCK_ROW, leased), 'a waiter holds nothing to force-release');
    assert.deepEqual(menus('etcd holder', true), sorted(LOCK_ROW, ['locklens.copyFencingToken', 'locklens.copyKey', 'locklens.copyLeaseId', 'locklens.showLeaseDetails']));
    const token = ['locklens.copyKey', 'locklens.copyOwner'];
    assert.deepEqual(menus('redis token holder'), sorted(LOCK_ROW, token, ['locklens.forceRelease']));
    assert.deepEqual(menus('redis token holder, own'), sorted(LOCK_ROW, token, ['locklens.releaseLock']));
    assert.deepEqual(menus('redis waiter'), sorted(LOCK_ROW, token));
    assert.deepEqual(menus('zookeeper holder'), sorted(LOCK_ROW, token, ['locklens.copyFencingToken', 'locklens.forceRelease']));
    assert.deepEqual(menus('sql session holder'), sorted(LOCK_ROW, token, ['locklens.forceRelease']));
  });

  test("every viewItem test in package.json's menus matches some row, and every menu entry shows on one", () => {
    const entries = Object.values(manifest.contributes.menus).flat().filter((m) => m.when?.includes('viewItem'));
    assert.ok(entries.length > 20, `${entries.length} menu entries test viewItem`);
    const rows = Object.values(ROWS);
    for (const entry of entries) {
      for (const clause of entry.when!.split('&&').filter((c) => c.includes('viewItem'))) {
        const regex = viewItemRegex(clause);
        assert.ok(regex, `${entry.command}: ${clause.trim()} is not a regex test, which an added flag would break`);
        assert.ok(
          rows.some((r) => regex.test(r)),
          `${entry.command}: ${clause.trim()} matches no row`,
        );
      }
      assert.ok(
        rows.some((r) => contextMenuEntries(manifest, r).includes(entry)),
        `${entry.command} (${entry.group}) shows on no row: ${entry.when}`,
      );
    }
  });

  test('a flag added anywhere changes no menu', () => {
    for (const [name, value] of Object.entries(ROWS)) {
      const [base, ...flags] = value.split('+');
      const before = contextMenuEntries(manifest, value);
      for (let at = 0; at <= flags.length; at++) {
        const added = [base, ...flags.slice(0, at), 'newFlag', ...flags.slice(at)].join('+');
        assert.deepEqual(contextMenuEntries(manifest, added), before, `${name}: ${added}`);
      }
      assert.deepEqual(contextMenuEntries(manifest, [base, ...flags.reverse()].join('+')), before, `${name}: flags in another order`);
    }
  });
});
