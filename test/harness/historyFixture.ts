import assert from 'node:assert/strict';
import { EtcdConnection } from '../../src/core/etcd/connect';
import { show } from './cli';
import { fixture } from './cliFixture';

/** `locklens history --json`'s documented shape, as the black-box tests read it. */
export interface HoldDoc {
  key: string;
  keyBase64?: string;
  lease: string;
  token: number;
  acquiredRevision: number;
  beforeHistory: boolean;
  endedRevision: number | null;
  end: string | null;
  waiters: string[];
  waitersBase64?: string[];
  waiterCount: number;
}
export interface HistoryDoc {
  lock: string;
  lockBase64?: string;
  fromRevision: number;
  toRevision: number;
  compactedAt: number | null;
  skippedBefore: number | null;
  endedOnSilence: boolean;
  holds: HoldDoc[];
}

/** Waits for the file $1, then appends the lock's key and the revision etcdctl took it at to the file $2. */
const WAIT_THEN_RECORD = 'while [ ! -e "$1" ]; do sleep 0.05; done; echo "$ETCD_LOCK_KEY $ETCD_LOCK_REV" >> "$2"';

/** The etcd fixture, with `locklens history --json`, connections of the test's own and the Go Mutex check of a replay. */
export function historyFixture() {
  const f = fixture();
  return Object.assign(f, {
    async history(name: string, extra: string[] = []): Promise<HistoryDoc> {
      const r = await f.procs.run(['history', name, '--endpoints', f.ep, '--json', ...extra]);
      assert.equal(r.code, 0, show(r));
      assert.equal(r.stderr, '', show(r));
      return JSON.parse(r.stdout) as HistoryDoc;
    },
    async connect(namespace?: string): Promise<EtcdConnection> {
      const conn = await EtcdConnection.open({ endpoints: [f.ep], namespace });
      f.procs.defer(() => conn.close());
      return conn;
    },
    /** `etcdctl lock NAME` running WAIT_THEN_RECORD with `gate`, once its key is in etcd (holding or queued). */
    lockRecording(name: string, gate: string, record: string) {
      return f.etcdctlLock(name, ['sh', '-c', WAIT_THEN_RECORD, 'sh', gate, record]);
    },
    /**
     * At every revision of `doc` (or those given), the replayed holder is the key a Go Mutex waits for: the lowest
     * create revision of every key under `lock/`, nested locks' keys included.
     */
    async assertGoMutexOrder(doc: HistoryDoc, revisions: Iterable<number> = between(doc.fromRevision, doc.toRevision)): Promise<void> {
      const conn = await this.connect();
      const prefix = `${doc.lock}/`;
      for (const revision of revisions) {
        const res = await conn.client.kv.range({
          key: Buffer.from(prefix), range_end: Buffer.from(`${doc.lock}0`), revision, sort_target: 'Create', sort_order: 'Ascend', limit: 1, keys_only: true,
        });
        assert.equal(holdAt(doc, revision)?.key ?? null, res.kvs[0]?.key.toString() ?? null, `the holder at revision ${revision}`);
      }
    },
  });
}

export function* between(from: number, to: number): Generator<number> {
  for (let r = from; r <= to; r++) yield r;
}

/** The hold holding at `revision`, by the replay. */
function holdAt(doc: HistoryDoc, revision: number): HoldDoc | undefined {
  return doc.holds.find((h) => h.acquiredRevision <= revision && (h.endedRevision === null || revision < h.endedRevision));
}
