import { after, afterEach, before, beforeEach } from 'node:test';
import type { EtcdConnection } from '../../src/core/etcd/connect';
import type { ConnectionProfile } from '../../src/core/profile';
import { Scope } from './core';
import { startEtcd, type EtcdServer, type StartOptions } from './etcd';

export interface EtcdSuite {
  /** One real etcd for the whole describe block. */
  readonly etcd: EtcdServer;
  /** A fresh scope for each test: everything opened through it is closed after the test, even when it fails. */
  readonly scope: Scope;
  /** A connection for each test, opened through `scope`. */
  readonly conn: EtcdConnection;
}

/** Call inside a `describe`: registers the hooks and returns the suite's etcd, scope and connection. */
export function etcdSuite(options: StartOptions & { profile?: Partial<ConnectionProfile> } = {}): EtcdSuite {
  const suite = {} as { etcd: EtcdServer; scope: Scope; conn: EtcdConnection };
  before(async () => {
    suite.etcd = await startEtcd(options);
  });
  after(async () => {
    await suite.etcd.dispose();
  });
  beforeEach(async () => {
    suite.scope = new Scope();
    suite.conn = await suite.scope.connect(suite.etcd.endpoint, options.profile);
  });
  afterEach(async () => {
    await suite.scope.dispose();
  });
  return suite;
}
