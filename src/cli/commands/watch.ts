import { displayKey, normalizePrefixes } from '../../core/keys';
import { permitCount, permitsSummary } from '../../core/permitCount';
import { lockJson, ownerText, type LockJson } from '../lockJson';
import { STORE_KINDS, STORES } from '../../core/stores';
import { CONNECTION_HELP, parse, wrap } from '../options';
import type { Command } from './command';

const withRevision = STORE_KINDS.filter((kind) => STORES[kind].cli.revision);
const without = STORE_KINDS.filter((kind) => !STORES[kind].cli.revision).map((kind) => STORES[kind].displayName);
/** Which stores' revisions a line carries, and which count the changes printed instead. */
const REVISIONS = `The revision is ${withRevision.map((kind) => STORES[kind].cli.revision).join(' or ')}; ${[without.slice(0, -1).join(', '), without.at(-1)].filter(Boolean).join(' and ')} have none to give, and count the changes printed instead.`;

export const watch: Command = {
  name: 'watch',
  summary: 'follow locks under prefixes live: one line per change',
  help: `Usage: locklens watch --prefix P [--prefix P2 ...] [--json]

Prints every lock under the prefixes once, then one line for every lock that changes (holder, queue), until
interrupted; a semaphore's line counts its permits and names every holder. Reconnects and resyncs by itself; connection trouble goes to stderr.
${STORE_KINDS.map((kind) => wrap(STORES[kind].cli.watch)).join('\n')}
${wrap(REVISIONS)}

  --prefix P    a key prefix to follow (repeatable; '' follows everything; ZooKeeper: a znode path)
  --json        one JSON object per line: {"revision", "lock": <as in list --json>} or {"revision", "removed": name}

${CONNECTION_HELP}`,
  options: { prefix: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  async run(args, connect, out) {
    const { values } = parse(args, this);
    const prefixes = normalizePrefixes((values.prefix as string[] | undefined ?? ['']).map((p) => Buffer.from(p)));
    const backend = await connect(values);
    const live = backend.watch(prefixes);
    const names = new Map<string, string>();
    /** `lease 1a2b, token 9` (etcd), `owner <token>` (Redis), `session 1a2b, token 9` (ZooKeeper). */
    const holderText = (lock: LockJson) => {
      const h = lock.holder!;
      const who = ownerText(h, backend.capabilities.owner);
      return h.token === null ? who : `${who}, token ${h.token}`;
    };
    /** A semaphore's line counts its permits and names every holder, none of which is "the" holder. */
    const permitsLine = (revision: number, lock: LockJson, permits: string) =>
      `${revision}  ${lock.name}  ${lock.kind}  ${permits}  holders ${lock.holders?.map((h) => h.key).join(', ') || '-'}  waiting ${lock.waiters.length}`;
    const print = (revision: number, lock: LockJson | undefined, removedId?: string, permits?: string) => {
      if (values.json) out.stdout(JSON.stringify(lock ? { revision, lock } : { revision, removed: names.get(removedId!) }));
      else if (lock && permits !== undefined) out.stdout(permitsLine(revision, lock, permits));
      else if (lock) out.stdout(`${revision}  ${lock.name}  ${lock.kind}  holder ${lock.holder?.key ?? '-'}${lock.holder ? ` (${holderText(lock)})` : ''}  waiting ${lock.waiters.length}`);
      else out.stdout(`${revision}  ${names.get(removedId!)}  free (no keys left)`);
    };
    live.onDidChangeLocks((changes) => {
      for (const lock of changes.changed) {
        names.set(lock.id, displayKey(lock.name));
        const count = permitCount(lock);
        print(changes.revision, lockJson(lock, () => undefined, backend.capabilities), undefined, count && permitsSummary(count));
      }
      for (const id of changes.removed) {
        print(changes.revision, undefined, id);
        names.delete(id);
      }
    });
    live.onDidChangeStatus((s) => out.stderr(`locklens: ${s.state}${s.error ? `: ${s.error.message}` : ''}${s.detail ? ` (${s.detail})` : ''}`));
    // Listening before the first load: its locks are printed while start() is still running, and a Ctrl-C that
    // follows them at once must end the watch cleanly, not kill the process.
    const stopped = new Promise<void>((resolve) => ['SIGINT', 'SIGTERM'].forEach((s) => process.once(s, () => resolve())));
    await live.start();
    await stopped;
    live.dispose();
    backend.close();
    return 0;
  },
};
