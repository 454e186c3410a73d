import { normalizePrefixes } from '../../core/keys';
import { lockJson, lockText } from '../lockJson';
import { CONNECTION_HELP, parse } from '../options';
import type { Command } from './command';

export const list: Command = {
  name: 'list',
  summary: 'print the locks under prefixes: holders and waiters in queue order, owners, TTLs, fencing tokens',
  help: `Usage: locklens list --prefix P [--prefix P2 ...] [--json]

Reads every key under the prefixes (etcd: at one revision) and groups them into locks by the layout of the client
that wrote them: etcd queue locks (Go Mutex, etcdctl, jetcd), UUID recipes, single-key try-locks and elections;
Redis: Redisson locks (hold counts, fair-lock queues, read/write locks), ShedLock, and token locks (redis-py,
redlock, SET NX PX). Samples each member's remaining TTL.
ZooKeeper (--url zookeeper://…): a prefix is a znode path, read with everything below it (/app, not /ap); a lock
is a znode whose children are contenders named as Curator (_c_<uuid>-lock-<seq>, its read/write locks, leader
latches as elections), kazoo (<hex>__lock__<seq>, __rlock__) or ZooKeeper's recipe (…-lock-<seq>) name them. The
lowest sequence holds, the others wait in sequence order. A member's owner is the session its ephemeral node goes
with, its token the node's creation zxid (czxid), its data what the client wrote there (kazoo's identifier,
Curator's IP). There is no TTL: a node lasts as long as its session, whose time left cannot be read.
PostgreSQL (--url postgres://…): the advisory locks of the URL's database (pg_locks), named by key (12345 for a
bigint key, 1:2 for an int pair); holders, then waiters in the order they began waiting; each member's owner is its
session's pid, with the session's user, application, client, state and query (pg_stat_activity). MySQL/MariaDB
(--url mysql://…): GET_LOCK locks by name, owners are connection ids, waiters the connections waiting in GET_LOCK.
Both: lock tables of the URL's database (ShedLock, Liquibase, a lock table with a unique lock_name, --lock-table),
named TABLE/ROW, with the row's expiry as TTL (a past one: expired; none: held until the row is cleared).

  --prefix P    a key prefix to read (repeatable; '' reads everything)
  --json        one JSON document: {"revision", "locks": [{"name","kind","holder","waiters"}]}; every entry has
                key, owner, lease, createRevision, token, holds, ttl and convention (null where the store has none);
                ZooKeeper's also data; SQL sessions' also session {user, application, client, connectedAt,
                state, query, waitingSince}; and "hidden" when the store would not show everything (a role
                that may not see other sessions), said on stderr too

${CONNECTION_HELP}`,
  options: { prefix: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values } = parse(args, this.options);
    const prefixes = normalizePrefixes((values.prefix as string[] | undefined ?? ['']).map((p) => Buffer.from(p)));
    const backend = await connect(values);
    try {
      const listing = await backend.list(prefixes);
      const lease = (id: string) => listing.lease(id);
      // What the store would not show goes to stderr, so that a script reading the listing still gets only the listing.
      if (listing.hidden) out.stderr(`note: ${listing.hidden}`);
      if (values.json) {
        const locks = listing.locks.map((l) => lockJson(l, lease, backend.capabilities));
        out.stdout(JSON.stringify({ revision: listing.revision, locks, ...(listing.hidden ? { hidden: listing.hidden } : {}) }, null, 2));
      } else {
        out.stdout(listing.locks.length ? listing.locks.map((l) => lockText(l, lease, backend.capabilities)).join('\n\n') : `no locks under ${prefixes.map((p) => `'${p}'`).join(', ')}`);
      }
      return 0;
    } finally {
      backend.close();
    }
  },
};
