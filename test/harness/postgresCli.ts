import assert from 'node:assert/strict';
import { show, type Result } from './cli';
import { serverFixture, type Lock } from './cliFixture';
import { eventually } from './etcd';
import { SUPERUSER_PASSWORD, startPostgres } from './postgres';
import { PsycopgLock } from './psycopg';

/**
 * Call inside a `describe`: one PostgreSQL for the block, `locklens --url postgres://` on it with the superuser's
 * password, and psycopg2 peers ended after each test.
 */
export function postgresCli() {
  const f = serverFixture(startPostgres, (server) => server.url());
  let n = 100;
  const url = () => f.server.url();
  /** `locklens ARGS` with the password where psql would find it. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> => f.procs.run(args, { env: { PGPASSWORD: SUPERUSER_PASSWORD, ...env } });
  const list = async (extra: string[] = []): Promise<Lock[]> => {
    const r = await cli(['list', '--url', url(), '--json', ...extra]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    const doc = JSON.parse(r.stdout) as { revision: null; locks: Lock[] };
    assert.equal(doc.revision, null, 'PostgreSQL has no revision to give');
    return doc.locks;
  };
  const lockNamed = async (name: string, extra: string[] = []) => (await list(extra)).find((l) => l.name === name);
  return Object.assign(f, {
    /** An advisory key no other test uses (the server is shared by the describe block). */
    fresh: () => String(++n),
    url,
    cli,
    start: (args: string[]) => f.procs.locklens(args, { env: { PGPASSWORD: SUPERUSER_PASSWORD } }),
    psycopg: (key: string, options: ConstructorParameters<typeof PsycopgLock>[2] = {}) => {
      const peer = new PsycopgLock(f.server.dsn(), key, options);
      f.defer(() => peer.dispose());
      return peer;
    },
    list,
    lockNamed,
    /** Lists until `name` is as the test arranged it (psycopg2 sessions act in their own time). */
    listed: (name: string, ready: (l: Lock) => boolean, what: string, extra: string[] = []): Promise<Lock> =>
      eventually(async () => {
        const lock = await lockNamed(name, extra);
        return lock && ready(lock) ? lock : undefined;
      }, 15_000, what),
    owners: (l: Lock) => ({ holder: l.holder?.owner, waiters: l.waiters.map((w) => w.owner) }),
  });
}
