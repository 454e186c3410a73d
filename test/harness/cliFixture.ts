import { after, afterEach, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as cliJson from '../../src/cli/lockJson';
import { Procs, show, type Proc } from './cli';
import { EtcdServer, eventually, startEtcd } from './etcd';

/** `locklens list --json`'s documented shape, as the black-box tests read it. */
export interface EntryJson {
  key: string;
  keyBase64?: string;
  lease: string;
  createRevision: number;
  ttl: number | null;
  owner: string;
  holds: number | null;
  token: number | null;
  convention: string;
}
export interface LockJson {
  name: string;
  kind: 'queue' | 'single' | 'election';
  holder: EntryJson | null;
  waiters: EntryJson[];
}
export interface ListJson {
  revision: number;
  locks: LockJson[];
}

/** The fields of a lock in `list --json` and `watch --json`. */
export const LOCK_KEYS = ['holder', 'kind', 'name', 'waiters'];
/** An object's keys in order, to compare a JSON document's fields whatever order they came in. */
export const sorted = (o: object) => Object.keys(o).sort();

export const HEX_KEY = (name: string) => new RegExp(`^${name}/([0-9a-f]+)$`);

/** A shell script that waits for the file $1 to exist, then appends $3 to the file $2. */
export const WAIT_THEN_APPEND = 'while [ ! -e "$1" ]; do sleep 0.05; done; echo "$3" >> "$2"';

/** A shell script that appends $2 to the file $1, waits for the file $3 to exist, then appends $4. */
export const MARK_WAIT_MARK = 'echo "$2" >> "$1"; while [ ! -e "$3" ]; do sleep 0.02; done; echo "$4" >> "$1"';

/** The lines of a file the test's processes append to ([] before the first). */
export const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** `locklens list --json` and `watch --json` as the tests of the other stores read them: what the CLI documents. */
export type Lock = cliJson.LockJson & { sharedWith?: cliJson.EntryJson[] };

/**
 * Call inside a `describe`: one server for the whole block, and for each test its processes (`procs`), a temp dir and
 * the cleanups it defers; all ended after the test, even when it fails.
 */
export function serverFixture<S extends { dispose(): Promise<unknown> }>(start: () => Promise<S>, endpoint: (server: S) => string) {
  const f = {
    server: undefined as unknown as S,
    procs: undefined as unknown as Procs,
    dir: '',
    /** Runs `cleanup` after the current test, once its processes are killed; the last deferred runs first. */
    defer: (cleanup: () => unknown) => f.procs.defer(cleanup),
  };
  before(async () => {
    f.server = await start();
  });
  after(async () => {
    await f.server?.dispose();
  });
  beforeEach(() => {
    f.procs = new Procs(endpoint(f.server));
    f.dir = mkdtempSync(join(tmpdir(), 'locklens-cli-'));
  });
  afterEach(async () => {
    await f.procs.dispose();
    rmSync(f.dir, { recursive: true, force: true });
  });
  return f;
}

/** Everything one etcd test needs: the etcd of its describe block, its processes, and a temp dir; all cleaned up. */
export function fixture() {
  const base = serverFixture(startEtcd, (etcd) => etcd.endpoint);
  const f = {
    get etcd(): EtcdServer {
      return base.server;
    },
    get procs(): Procs {
      return base.procs;
    },
    get dir(): string {
      return base.dir;
    },
    get ep(): string {
      return f.etcd.endpoint;
    },
    /** The keys under `prefix`, in key order. */
    async keys(prefix: string): Promise<string[]> {
      const out = await f.etcd.etcdctl(['get', '--prefix', prefix, '--keys-only']);
      return out.split('\n').filter((l) => l.length > 0);
    },
    async createRevision(key: string): Promise<number> {
      const out = JSON.parse(await f.etcd.etcdctl(['get', key, '-w', 'json'])) as { kvs?: { create_revision: number }[] };
      assert.ok(out.kvs?.length, `key ${key} exists`);
      return out.kvs![0].create_revision;
    },
    /** Starts `etcdctl lock NAME [-- CMD...]` and resolves once its key is in etcd (it holds or queues). */
    async etcdctlLock(name: string, command: string[] = []): Promise<{ proc: Proc; key: string }> {
      const before = new Set(await f.keys(`${name}/`));
      const proc = f.procs.etcdctl(['lock', name, ...(command.length ? ['--', ...command] : [])]);
      const key = await eventually(async () => {
        if (!proc.running) throw new Error(`etcdctl lock ${name} exited: ${proc.stderr}`);
        return (await f.keys(`${name}/`)).find((k) => !before.has(k));
      }, 20_000, `etcdctl lock ${name} key`);
      return { proc, key };
    },
    /** Resolves once there are exactly `n` keys under `prefix`. */
    async keyCount(prefix: string, n: number, procs: Proc[] = []): Promise<string[]> {
      return eventually(async () => {
        for (const p of procs) if (!p.running) throw new Error(`${p.description} exited early: ${p.stdout} ${p.stderr}`);
        const ks = await f.keys(prefix);
        return ks.length === n ? ks : undefined;
      }, 20_000, `${n} keys under ${prefix}`);
    },
    async list(prefix: string, extra: string[] = []): Promise<ListJson> {
      const r = await f.procs.run(['list', '--endpoints', f.ep, '--prefix', prefix, '--json', ...extra]);
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stderr, '', show(r));
      return JSON.parse(r.stdout) as ListJson;
    },
  };
  return f;
}
