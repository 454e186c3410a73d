import { normalizePrefixes } from '../../core/keys';
import { lockJson, lockText } from '../lockJson';
import { STORE_KINDS, STORES } from '../../core/stores';
import { CONNECTION_HELP, parse, wrap } from '../options';
import type { Command } from './command';

export const list: Command = {
  name: 'list',
  summary: 'print the locks under prefixes: holders and waiters in queue order, owners, TTLs, fencing tokens',
  help: `Usage: locklens list --prefix P [--prefix P2 ...] [--json]

Reads the locks under the prefixes and groups them by the layout of the client that wrote them; samples each
member's remaining TTL where the store has TTLs.
${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.list)).join('\n')}

  --prefix P    a key prefix to read (repeatable; '' reads everything)
  --json        one JSON document: {"revision", "locks": [{"name","kind","holder","waiters"}]}; every entry has
                key, owner, lease, createRevision, token, holds, ttl and convention (null where the store has none);
                ZooKeeper's also data; SQL sessions' also session {user, application, client, connectedAt,
                state, query, waitingSince}; each a liveness {state, evidence}: "alive", "paused" (renewals or
                pings stopped while what ends it lives on), "gone" (its ZooKeeper session has no client
                connected) or "unknown" (a TTL that ran out ends the hold but tells nothing of its holder), with
                what was seen; and "hidden" when the store would not show everything (a role
                that may not see other sessions), said on stderr too. A semaphore also has "permits" {limit, free,
                holdersRecorded} (null where only its clients know) and "holders", every permit holder

${CONNECTION_HELP}`,
  options: { prefix: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values } = parse(args, this);
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
