/** The layouts a free etcd name can be taken in (see storeLayouts.ts): the descriptor lists them, acquire takes them. */
import * as l10n from '@vscode/l10n';
import type { FreeNameLayouts } from '../storeLayouts';
import type { Convention } from './conventions';

export const ETCD_LAYOUTS: FreeNameLayouts<Convention> = {
  layouts: [
    { id: 'go-mutex', label: 'queue <name>/<lease>: Go concurrency.Mutex, etcdctl lock, jetcd, the v3lock service', conventions: ['go-mutex'] },
    { id: 'single-key', label: 'single key with a lease: python-etcd3 Lock (/locks/<name>), npm etcd3 Lock', conventions: ['single-key'] },
  ],
  // Neither family sees the other: a Mutex ranges over `<name>/` and never reads the key `<name>`, a single-key
  // client compares that key alone; either takes the lock beside the other's. The queue is etcd's own (etcdctl lock
  // and the server's v3lock service, which jetcd and every gRPC client call, are Go's Mutex), so most clients count it.
  defaultId: 'go-mutex',
  why: () => l10n.t("etcd's own lock (etcdctl lock, the v3lock service jetcd uses) is Go's Mutex queue; single-key clients and the queue do not see each other"),
};
