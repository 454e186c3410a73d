import { after, afterEach, before, beforeEach } from 'node:test';
import type { ZkClient } from '../../src/core/zookeeper/client';
import { ZkConnection, ensembleOf, openSession } from '../../src/core/zookeeper/connect';
import { ZooKeeperBackend } from '../../src/core/zookeeper/zookeeperBackend';
import { startZooKeeper, type ZooKeeperServer } from './zookeeper';

const DIAL_MS = 2000;

export interface ZooKeeperSuite {
  /** One real ZooKeeper server for the whole describe block. */
  readonly server: ZooKeeperServer;
  /** LockLens's backend on it (sessions of 4 s). */
  readonly backend: ZooKeeperBackend;
  /** A path of the current test's own, under which it makes its nodes. */
  readonly path: string;
  /** A connection of the test's own, to write nodes behind LockLens's back. */
  raw(): ZkClient;
  /** A session of its own (4 s), closed after the test: a client whose nodes go with it. */
  session(): Promise<ZkClient>;
  /** Runs `cleanup` after the current test, even when it fails; the last deferred runs first. */
  defer(cleanup: () => unknown): void;
}

/** Call inside a `describe`: registers the hooks and returns the suite's server, backend and raw connection. */
export function zooKeeperSuite(): ZooKeeperSuite {
  const cleanups: (() => unknown)[] = [];
  let rawConnection: ZkConnection | undefined;
  let n = 0;
  const spec = () => ensembleOf({ endpoints: [suite.server.url], dialTimeoutMs: DIAL_MS });
  const suite = {
    defer: (cleanup: () => unknown) => void cleanups.push(cleanup),
    raw: () => rawConnection!.client,
    session: async () => {
      const { url, spec: session } = spec();
      const s = await openSession({ ...session, sessionTimeoutMs: 4000 }, url.servers);
      suite.defer(() => s.close());
      return s;
    },
  } as { -readonly [K in keyof ZooKeeperSuite]: ZooKeeperSuite[K] };
  before(async () => {
    suite.server = await startZooKeeper();
    suite.backend = await ZooKeeperBackend.open({ store: 'zookeeper', endpoints: [`${suite.server.url}?sessionTimeout=4000`], dialTimeoutMs: DIAL_MS });
    const { url, spec: session } = spec();
    rawConnection = await ZkConnection.open(session, url.servers);
  });
  after(async () => {
    suite.backend?.close();
    await rawConnection?.close();
    await suite.server?.dispose();
  });
  beforeEach(() => {
    suite.path = `/s${++n}`;
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return suite;
}
