import assert from 'node:assert/strict';
import type { LockJson } from '../../src/cli/lockJson';
import { show, type Result } from './cli';
import { serverFixture } from './cliFixture';
import { eventually } from './etcd';
import { ADMIN, startMariaDb } from './mariadb';
import { PyMysqlLock } from './pymysql';

/**
 * Call inside a `describe`: one MariaDB for the block, `locklens --url mysql://` on it with the admin's password, and
 * PyMySQL peers ended after each test.
 */
export function mariadbCli() {
  const f = serverFixture(startMariaDb, (server) => server.url());
  let n = 0;
  const url = () => f.server.url();
  /** `locklens ARGS` with the password where the mysql client would find it. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> => f.procs.run(args, { env: { MYSQL_PWD: ADMIN.password, ...env } });
  const list = async (extra: string[] = []): Promise<LockJson[]> => {
    const r = await cli(['list', '--url', url(), '--json', ...extra]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: LockJson[] };
    assert.equal(doc.revision, null, 'MariaDB has no revision to give');
    return doc.locks;
  };
  const lockNamed = async (name: string) => (await list(['--prefix', name])).find((l) => l.name === name);
  return Object.assign(f, {
    /** A GET_LOCK name no other test uses (names are server-wide, the server is shared by the describe block). */
    fresh: (base: string) => `${base}-${++n}`,
    url,
    cli,
    start: (args: string[]) => f.procs.locklens(args, { env: { MYSQL_PWD: ADMIN.password } }),
    pymysql: (name: string, options: ConstructorParameters<typeof PyMysqlLock>[2] = {}) => {
      const peer = new PyMysqlLock({ port: f.server.port, ...ADMIN }, name, options);
      f.defer(() => peer.dispose());
      return peer;
    },
    list,
    lockNamed,
    /** Lists until `name` is as the test arranged it (PyMySQL connections act in their own time). */
    listed: (name: string, ready: (l: LockJson) => boolean, what: string): Promise<LockJson> =>
      eventually(async () => {
        const lock = await lockNamed(name);
        return lock && ready(lock) ? lock : undefined;
      }, 15_000, what),
    owners: (l: LockJson) => ({ holder: l.holder?.owner, waiters: l.waiters.map((w) => w.owner) }),
  });
}
