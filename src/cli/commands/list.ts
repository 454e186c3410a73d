import type { EtcdConnection } from '../../core/connection';
import { readPrefixes } from '../../core/keyspace';
import { LeaseTracker } from '../../core/leases';
import { normalizePrefixes } from '../../core/liveLocks';
import { LockModel } from '../../core/lockModel';
import { lockJson, lockText } from '../lockJson';
import { CONNECTION_HELP, parse } from '../options';
import type { Command } from './command';

export const list: Command = {
  name: 'list',
  summary: 'print the locks under prefixes: holder and waiters in queue order, leases, TTLs, fencing tokens',
  help: `Usage: locklens list --prefix P [--prefix P2 ...] [--json]

Reads every key under the prefixes at one revision, groups them into locks (Go/etcdctl/jetcd queue locks,
UUID recipes, single-key try-locks, elections) and samples each lease's remaining TTL.

  --prefix P    a key prefix to read (repeatable; '' reads the whole keyspace)
  --json        one JSON document: {"revision", "locks": [{"name","kind","holder","waiters"}]}

${CONNECTION_HELP}`,
  options: { prefix: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values } = parse(args, this.options);
    const prefixes = normalizePrefixes((values.prefix as string[] | undefined ?? ['']).map((p) => Buffer.from(p)));
    const conn: EtcdConnection = await connect(values);
    try {
      const read = await readPrefixes(conn, prefixes);
      const model = new LockModel();
      model.reload(() => true, read.records, read.revision);
      const locks = model.locks();
      const leases = new LeaseTracker(conn);
      await leases.sweep(locks.flatMap((l) => [l.holder, ...l.waiters]).flatMap((m) => (m?.lease ? [m.lease] : [])));
      const json = locks.map((l) => lockJson(l, (id) => leases.get(id)));
      if (values.json) out.stdout(JSON.stringify({ revision: read.revision, locks: json }, null, 2));
      else out.stdout(json.length ? json.map(lockText).join('\n\n') : `no locks under ${prefixes.map((p) => `'${p}'`).join(', ')}`);
      return 0;
    } finally {
      conn.close();
    }
  },
};
