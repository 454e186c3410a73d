import { afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CLI, Procs, show, type Result } from '../harness/cli';
import { fixture, sorted, type ListJson } from '../harness/cliFixture';
import { ADMIN, DATABASE } from '../harness/mariadb';
import { mariadbCli } from '../harness/mariadbCli';
import { freePort } from '../harness/ports';
import { SUPERUSER, SUPERUSER_PASSWORD } from '../harness/postgres';
import { postgresCli } from '../harness/postgresCli';
import { redisCli, type LockDoc } from '../harness/redisCli';
import { zookeeperCli } from '../harness/zookeeperCli';

/**
 * Black-box tests of what `locklens` (dist/locklens.js) does whatever the command: usage and help, unknown commands
 * and flags, the connection flags and environment, and how a connection that fails is said and exits, against each
 * store's real server.
 */

// None of these reaches a store: help, the version and a command line of the wrong shape are answered before connecting.
describe('locklens: version, help and usage', () => {
  let procs: Procs;
  beforeEach(() => (procs = new Procs('')));
  afterEach(() => procs.dispose());
  const cli = (args: string[]) => procs.run(args);

  /** The commands the top-level usage lists, by name. */
  async function commandNames(): Promise<string[]> {
    const r = await cli(['help']);
    return [...r.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]);
  }
  /** The first line of `locklens help NAME`. */
  async function usageLineOf(name: string): Promise<string> {
    return (await cli(['help', name])).stdout.split('\n', 1)[0];
  }

  test('--version and -V print "locklens <version>", the version of package.json, and exit 0', async () => {
    const { version } = JSON.parse(readFileSync(resolve(CLI, '../../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag]);
      assert.equal(r.code, 0, `${flag}: ${show(r)}`);
      assert.equal(r.stdout, `locklens ${version}\n`, `${flag}: ${show(r)}`);
      assert.equal(r.stderr, '', `${flag}: ${show(r)}`);
    }
  });

  test('-h, --help and help print the usage with every command and exit 0; without arguments it exits 2', async () => {
    const none = await cli([]);
    assert.equal(none.code, 2, show(none));
    assert.match(none.stdout, /^Usage: locklens <command>/, show(none));
    assert.match(none.stdout, /locklens --version/, show(none));
    assert.deepEqual(await commandNames(), ['list', 'acquire', 'unlock', 'revoke', 'watch', 'history', 'diagnose', 'serve']);
    for (const asked of [['-h'], ['--help'], ['help']]) {
      const r = await cli(asked);
      assert.equal(r.code, 0, `${asked.join(' ')}: ${show(r)}`);
      assert.equal(r.stdout, none.stdout, asked.join(' '));
      assert.equal(r.stderr, '', `${asked.join(' ')}: ${show(r)}`);
    }
  });

  test("help CMD, CMD -h and CMD --help print that command's help and exit 0, for every command", async () => {
    for (const name of await commandNames()) {
      const asked = [['help', name], ['--help', name], [name, '-h'], [name, '--help']];
      const [first, ...others] = await Promise.all(asked.map((args) => cli(args)));
      assert.equal(first.code, 0, `help ${name}: ${show(first)}`);
      assert.match(first.stdout, new RegExp(`^Usage: locklens ${name} `), `help ${name}: ${show(first)}`);
      // serve's connections are in its config file; every other command takes the connection flags.
      assert.match(first.stdout, name === 'serve' ? /--config FILE/ : /--endpoints/, `help ${name}: ${show(first)}`);
      others.forEach((r, i) => {
        assert.equal(r.code, 0, `${asked[i + 1].join(' ')}: ${show(r)}`);
        assert.equal(r.stdout, first.stdout, asked[i + 1].join(' '));
      });
    }
  });

  test("a missing argument is said in words, then the command's usage line; exit 2", async () => {
    const missing: Record<string, string> = {
      acquire: "acquire needs the lock's NAME",
      unlock: "unlock needs the lock's NAME",
      history: "history needs the lock's NAME",
      revoke: "revoke needs the lease's hex ID (LEASE_HEX)",
    };
    for (const [name, said] of Object.entries(missing)) {
      const r = await cli([name]);
      assert.equal(r.code, 2, `${name}: ${show(r)}`);
      assert.equal(r.stderr, `locklens: ${said}\n${await usageLineOf(name)}\n`, `${name}: ${show(r)}`);
      assert.equal(r.stdout, '', `${name}: ${show(r)}`);
    }
  });

  test("an unknown flag or a stray argument is said, then the command's usage line; exit 2, for every command", async () => {
    for (const name of await commandNames()) {
      const usage = await usageLineOf(name);
      assert.match(usage, new RegExp(`^Usage: locklens ${name} `));
      const r = await cli([name, 'x', '--bogus']);
      assert.equal(r.code, 2, `${name}: ${show(r)}`);
      assert.match(r.stderr, /^locklens: Unknown option '--bogus'/, `${name}: ${show(r)}`);
      assert.ok(r.stderr.endsWith(`\n${usage}\n`), `${name}: ${show(r)}`);
      if (name === 'acquire') continue; // it takes several NAMEs: a second one is no stray
      const stray = await cli([name, 'x', 'stray']);
      assert.equal(stray.code, 2, `${name}: ${show(stray)}`);
      assert.equal(stray.stderr, `locklens: unexpected argument '${['list', 'watch', 'diagnose', 'serve'].includes(name) ? 'x' : 'stray'}'\n${usage}\n`, `${name}: ${show(stray)}`);
    }
  });

  test('an unknown command, or help for one, names it and lists the commands; exit 2', async () => {
    const commands = await commandNames();
    for (const [args, said] of [[['frobnicate'], "unknown command 'frobnicate'"], [['help', 'frobnicate'], "unknown command 'frobnicate'"], [['--frobnicate'], "unknown option '--frobnicate'"]] as const) {
      const r = await cli([...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${show(r)}`);
      assert.ok(r.stderr.startsWith(`locklens: ${said}\n`), `${args.join(' ')}: ${show(r)}`);
      assert.match(r.stderr, /Usage: locklens <command>/, show(r));
      for (const name of commands) assert.match(r.stderr, new RegExp(`^  ${name} `, 'm'), `${args.join(' ')}: ${name}`);
      assert.equal(r.stdout, '', `${args.join(' ')}: ${show(r)}`);
    }
  });
});

describe('locklens over etcd (--endpoints)', () => {
  const f = fixture();

  describe('locklens: errors and usage', () => {
    async function cli(args: string[]): Promise<Result> {
      return f.procs.run(args);
    }

    test('an unreachable endpoint exits 3 and says the connection was refused', async () => {
      const port = await freePort();
      const r = await cli(['list', '--endpoints', `127.0.0.1:${port}`, '--dial-timeout', '3s']);
      assert.equal(r.code, 3, show(r));
      assert.match(r.stderr, /refused/, show(r));
      assert.equal(r.stdout, '', show(r));
    });

    test('an invalid endpoint exits 2', async () => {
      const r = await cli(['list', '--endpoints', 'nonsense:99999']);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /nonsense:99999/, show(r));
    });

    test('an unknown command exits 2 and names it', async () => {
      const r = await cli(['frobnicate', '--endpoints', f.ep]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /unknown command 'frobnicate'/, show(r));
      assert.match(r.stderr, /Usage: locklens/, show(r));
    });

    test('no arguments exits 2 with the usage on stdout; --help exits 0', async () => {
      const r = await cli([]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stdout, /^Usage: locklens <command>/, show(r));
      for (const name of ['list', 'acquire', 'revoke', 'watch']) assert.match(r.stdout, new RegExp(`^  ${name} `, 'm'));
      const help = await cli(['--help']);
      assert.equal(help.code, 0, show(help));
      assert.equal(help.stdout, r.stdout);
    });

    test('<command> --help exits 0 with that command\'s usage', async () => {
      for (const name of ['list', 'acquire', 'revoke', 'watch']) {
        const r = await cli([name, '--help']);
        assert.equal(r.code, 0, `${name}: ${show(r)}`);
        assert.match(r.stdout, new RegExp(`^Usage: locklens ${name} `), `${name}: ${show(r)}`);
        assert.match(r.stdout, /--endpoints/, `${name}: ${show(r)}`);
      }
    });

    test('an unknown flag or a stray argument exits 2', async () => {
      const r = await cli(['list', '--bogus', '--endpoints', f.ep]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.stderr, /--bogus/, show(r));
      const stray = await cli(['list', 'stray', '--endpoints', f.ep]);
      assert.equal(stray.code, 2, show(stray));
      assert.match(stray.stderr, /unexpected argument 'stray'/, show(stray));
    });

    test('ETCDCTL_ENDPOINTS is read when --endpoints is not given', async () => {
      await f.etcd.etcdctl(['put', 'envep/key', 'x']);
      const r = await f.procs.run(['list', '--prefix', 'envep/', '--json'], { env: { ETCDCTL_ENDPOINTS: f.ep } });
      assert.equal(r.code, 0, show(r));
      assert.equal((JSON.parse(r.stdout) as ListJson).locks[0]?.name, 'envep/key', show(r));
    });
  });
});

// An etcd of its own: turning authentication on changes the server for every test on it.
describe('locklens: password auth', () => {
  const f = fixture();

  before(async () => {
    await f.etcd.etcdctl(['user', 'add', 'root:pw']);
    await f.etcd.etcdctl(['auth', 'enable']);
  });

  test('a wrong password exits 4; the right one exits 0', async () => {
    const bad = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root:bad']);
    assert.equal(bad.code, 4, show(bad));
    assert.match(bad.stderr, /credentials|authentication/i, show(bad));
    assert.equal(bad.stdout, '', show(bad));
    const good = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root:pw', '--json']);
    assert.equal(good.code, 0, show(good));
    assert.deepEqual(sorted(JSON.parse(good.stdout) as object), ['locks', 'revision']);
  });

  test('the password can come from LOCKLENS_PASSWORD; no user at all exits 4', async () => {
    const env = await f.procs.run(['list', '--endpoints', f.ep, '--user', 'root'], { env: { LOCKLENS_PASSWORD: 'pw' } });
    assert.equal(env.code, 0, show(env));
    const none = await f.procs.run(['list', '--endpoints', f.ep]);
    assert.equal(none.code, 4, show(none));
  });
});

describe('locklens over Redis (--url), against redis-py and Redisson layouts', () => {
  const f = redisCli();
  const { url } = f;

  test('the database number in the URL is the one read: a lock in db 3 is listed with /3, not with /0', async () => {
    await f.server.cli(['-n', '3', 'SET', 'db3:lock', 'token-in-db-3']);
    await f.server.cli(['SET', 'db3:other', 'token-in-db-0']);
    const r = await f.procs.run(['list', '--url', `${url()}/3`, '--prefix', 'db3:', '--json']);
    assert.equal(r.code, 0, show(r));
    const names = (JSON.parse(r.stdout) as { locks: LockDoc[] }).locks.map((l) => `${l.name}=${l.holder?.owner}`);
    assert.deepEqual(names, ['db3:lock=token-in-db-3']);
  });

  test('a CLI built without the Redis store says so and exits 1, instead of a module-not-found crash', async () => {
    // The CLI bundle alone, without dist/stores/ beside it.
    copyFileSync(CLI, join(f.dir, 'locklens.js'));
    const r = await f.procs.spawn(process.execPath, [join(f.dir, 'locklens.js'), 'list', '--url', url(), '--prefix', 'app:']).exited;
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /this build of LockLens has no redis store \(.*stores\/redis\.js is missing\)/, show(r));
    assert.doesNotMatch(r.stderr, /MODULE_NOT_FOUND|\n\s+at /, 'a sentence, not a stack trace');
  });
});

describe('locklens over ZooKeeper (--url zookeeper://), against kazoo and Curator layouts', { timeout: 180_000 }, () => {
  const f = zookeeperCli();

  test('the help of list, acquire, unlock and watch says what each does over ZooKeeper', async () => {
    const says: Record<string, string[]> = {
      list: [
        'ZooKeeper (--url zookeeper://…): a prefix is a znode path',
        'kazoo (<hex>__lock__<seq>, __rlock__)',
        'Curator (_c_<uuid>-lock-<seq>',
        "A member's owner is the session its ephemeral node goes with, its token the node's creation zxid (czxid)",
        'There is no TTL: a node lasts as long as its session',
        'A kazoo Semaphore (leases <hex> under its path, its limit in the path\'s data, its Lock at PATH-__lock__)',
      ],
      acquire: [
        'Joins it in the layout the lock already has',
        "--layout's for a NAME nobody uses yet",
        'watches only the node just ahead of it',
        'Each acquire has a ZooKeeper session of its own whose timeout is --ttl',
        "ZooKeeper: the node's creation zxid, czxid",
        'ZooKeeper: its node deleted, its session expired, or nothing heard for a session timeout',
        '--ttl S lease TTL in seconds (default 10, as etcdctl lock); ZooKeeper: the session timeout asked for',
        "Curator's InterProcessReadWriteLock or kazoo's ReadLock/WriteLock",
      ],
      unlock: [
        "ZooKeeper: deletes the holder's node if it is still the one created at the zxid shown",
        'the contender watching it (the next in sequence) wakes and takes the lock',
        "A semaphore's permit is its lease: only that lease is deleted",
        "The holder's process is not told: it may still believe it holds the lock",
      ],
      watch: ['ZooKeeper is followed by watches on the znodes under each path', 'Redis, ZooKeeper, PostgreSQL and MySQL/MariaDB have none to give'],
    };
    for (const [command, sentences] of Object.entries(says)) {
      const r = await f.procs.run([command, '--help']);
      assert.equal(r.code, 0, show(r));
      // Lines are wrapped for the terminal: the sentences are looked for in the text as one line.
      const help = r.stdout.replace(/\s+/g, ' ');
      for (const said of sentences) assert.ok(help.includes(said), `${command} --help: ${said}`);
    }
  });
});

describe('locklens over PostgreSQL (--url postgres://), against psycopg2 sessions and lock tables', { timeout: 300_000 }, () => {
  const f = postgresCli();
  const { url, cli } = f;

  test('connection errors: a wrong password exits 4, nothing listening exits 3, a password in the URL exits 2; the password is never printed', async () => {
    const wrong = await cli(['list', '--url', url()], { PGPASSWORD: 'not the password' });
    assert.equal(wrong.code, 4, show(wrong));
    assert.match(wrong.stderr, /^locklens: PostgreSQL at 127\.0\.0\.1:\d+\/postgres refused role "postgres": wrong password, or no such role/, show(wrong));
    assert.ok(!wrong.stderr.includes('not the password'));
    // LOCKLENS_PASSWORD comes before PGPASSWORD.
    const preferred = await cli(['list', '--url', url()], { PGPASSWORD: 'not the password', LOCKLENS_PASSWORD: SUPERUSER_PASSWORD });
    assert.equal(preferred.code, 0, show(preferred));

    const port = await freePort();
    const nobody = await cli(['list', '--url', `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`, '--dial-timeout', '3s']);
    assert.equal(nobody.code, 3, show(nobody));
    assert.equal(nobody.stderr, `locklens: nothing listens on 127.0.0.1:${port} (connection refused)\n`);

    const inUrl = await cli(['list', '--url', url().replace(`${SUPERUSER}@`, `${SUPERUSER}:hunter2@`)]);
    assert.equal(inUrl.code, 2, show(inUrl));
    assert.match(inUrl.stderr, /is not a database URL: the password goes in the connection's secret storage \(the CLI: LOCKLENS_PASSWORD\), not in the URL/, show(inUrl));
    assert.ok(!inUrl.stderr.includes('hunter2'), 'the refused URL is echoed without its password');
    assert.match(inUrl.stderr, /'postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres'/, show(inUrl));
  });
});

describe('locklens over MariaDB (--url mysql://), against PyMySQL connections and lock tables', { timeout: 300_000 }, () => {
  const f = mariadbCli();
  const { url, cli } = f;

  test('connection errors: a wrong password exits 4 without printing it, nothing listening exits 3, a password in the URL exits 2', async () => {
    const wrong = await cli(['list', '--url', url()], { MYSQL_PWD: 'not the password' });
    assert.equal(wrong.code, 4, show(wrong));
    assert.match(wrong.stderr, /^locklens: cannot connect to MySQL at 127\.0\.0\.1:\d+\/app: access denied for user 'locklens': wrong password/, show(wrong));
    assert.ok(!wrong.stderr.includes('not the password'));
    const preferred = await cli(['list', '--url', url()], { MYSQL_PWD: 'not the password', LOCKLENS_PASSWORD: ADMIN.password });
    assert.equal(preferred.code, 0, show(preferred));

    const port = await freePort();
    const nobody = await cli(['list', '--url', `mysql://${ADMIN.user}@127.0.0.1:${port}/${DATABASE}`, '--dial-timeout', '3s']);
    assert.equal(nobody.code, 3, show(nobody));
    assert.equal(nobody.stderr, `locklens: cannot connect to MySQL at 127.0.0.1:${port}/${DATABASE}: nothing listens on 127.0.0.1:${port} (connection refused)\n`);

    const inUrl = await cli(['list', '--url', url().replace(`${ADMIN.user}@`, `${ADMIN.user}:hunter2@`)]);
    assert.equal(inUrl.code, 2, show(inUrl));
    assert.ok(!inUrl.stderr.includes('hunter2'), show(inUrl));
    assert.match(inUrl.stderr, /not in the URL/, show(inUrl));
  });
});
