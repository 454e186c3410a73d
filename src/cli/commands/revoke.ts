import { LockLensError } from '../../core/errors';
import { displayKey, parseLeaseHex } from '../../core/keys';
import { confirmOnTerminal } from '../confirm';
import { CONNECTION_HELP, parse } from '../options';
import type { Command } from './command';

export const revoke: Command = {
  name: 'revoke',
  summary: 'revoke an etcd lease (deleting every key it holds, so the locks it blocks move on)',
  help: `Usage: locklens revoke LEASE_HEX [--yes]

Revokes the lease (hex, as in Go lock keys and etcdctl output) and prints the keys it deleted. Without --yes it
lists those keys and asks for confirmation; with no terminal to ask on, it refuses.

  --yes         do not ask

${CONNECTION_HELP}`,
  argument: "the lease's hex ID (LEASE_HEX)",
  options: { yes: { type: 'boolean', short: 'y' } },
  async run(args, connect, out) {
    const { values, positionals } = parse(args, this);
    const id = parseLeaseHex(positionals[0]);
    if (!id) throw new LockLensError('INVALID_ARGUMENT', `'${positionals[0]}' is not a lease ID (hex, e.g. 694d7a1b2c3d4e5f)`);
    const backend = await connect(values);
    try {
      const leases = backend.leases;
      if (!leases) throw new LockLensError('INVALID_ARGUMENT', `${backend.kind} has no leases: free a stuck lock with 'locklens unlock NAME --force'`);
      if (!values.yes) {
        const sample = await leases.describe(id);
        if (sample.ttl < 0) throw new LockLensError('LEASE_NOT_FOUND', `lease ${id} does not exist (expired or already revoked)`);
        if (!process.stdin.isTTY) throw new LockLensError('INVALID_ARGUMENT', `refusing to revoke lease ${id} without confirmation: pass --yes`);
        out.stderr(`Lease ${id} (ttl ${sample.ttl}s of ${sample.grantedTtl}s) holds ${sample.keys.length} key(s):`);
        for (const k of sample.keys) out.stderr(`  ${displayKey(k)}`);
        if (!(await confirmOnTerminal('Revoke it and delete these keys?', `refusing to revoke lease ${id}`))) {
          out.stderr('not revoked');
          return 1;
        }
      }
      const result = await leases.revoke(id);
      out.stdout(`revoked lease ${id} at revision ${result.revision}; deleted ${result.keys.length} key(s)`);
      for (const k of result.keys) out.stdout(`  ${displayKey(k)}`);
      return 0;
    } finally {
      backend.close();
    }
  },
};
