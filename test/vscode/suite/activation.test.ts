import assert from 'node:assert/strict';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { EtcdConnection } from '../../../src/core/etcd/connect';
import { startEtcd, type EtcdServer } from '../../harness/etcd';

// Each suite file starts its own real etcd (Debian's, from the same harness as the node:test suites) inside the
// extension host, and stops it in `after`.
describe('activation', () => {
  let etcd: EtcdServer;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.dispose();
  });

  it('the extension locklens.locklens is installed and activates', async () => {
    const extension = vscode.extensions.getExtension('locklens.locklens');
    assert.ok(extension, 'locklens.locklens is not among the extensions');
    await extension.activate();
    assert.equal(extension.isActive, true);
  });

  it('a real etcd started from the harness answers in the extension host', async () => {
    await etcd.etcdctl(['put', 'locklens-e2e/hello', 'world']);
    const conn = await EtcdConnection.open({ endpoints: [etcd.endpoint] });
    try {
      const value = await conn.client.get('locklens-e2e/hello').string();
      assert.equal(value, 'world');
    } finally {
      conn.close();
    }
  });
});
