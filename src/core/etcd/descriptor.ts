import * as l10n from '@vscode/l10n';
import { parseEndpoints } from '../profile';
import type { StoreDescriptor } from '../storeDescriptor';
import { ETCD_CAPABILITIES } from './capabilities';
import { ETCD_LAYOUTS } from './layouts';
import type { Convention } from './conventions';

export const etcdStore: StoreDescriptor<Convention> = {
  kind: 'etcd',
  displayName: 'etcd',
  schemes: ['etcd', 'http', 'https'],
  capabilities: ETCD_CAPABILITIES,
  conventions: {
    'go-mutex': 'Go concurrency.Mutex, etcdctl lock, jetcd',
    'go-election': 'Go Election, etcdctl elect',
    'etcd3-election': 'npm etcd3 Election',
    'recipe-uuid': 'revision-ordered recipe with UUID keys',
    'single-key': 'single-key try-lock: npm etcd3 Lock, python-etcd3',
  },
  freeNameLayouts: ETCD_LAYOUTS,
  checkEndpoints: (endpoints) => void parseEndpoints(endpoints),
  endpointsAskTls: (endpoints) => parseEndpoints(endpoints).wantsTls,
  open: (profile) => (require('./etcdBackend') as typeof import('./etcdBackend')).EtcdBackend.open(profile),
  namespaces: true,
  lockTables: false,
  nameSeparator: '/',
  environment: {
    password: 'ETCDCTL_PASSWORD',
    endpoints: 'ETCDCTL_ENDPOINTS',
    user: 'ETCDCTL_USER',
    cacert: 'ETCDCTL_CACERT',
    cert: 'ETCDCTL_CERT',
    key: 'ETCDCTL_KEY',
    insecureSkipTlsVerify: 'ETCDCTL_INSECURE_SKIP_TLS_VERIFY',
  },
  form: {
    libraries: () => l10n.t('Go concurrency.Mutex, etcdctl lock, jetcd, elections, single-key locks'),
    endpointsPrompt: () => l10n.t('etcd endpoints, comma separated (https:// turns TLS on)'),
    endpointsExample: '127.0.0.1:2379',
    authLabel: () => l10n.t('User name and password'),
    userPrompt: () => l10n.t('User name'),
    tls: {},
    watchPrompt: () => l10n.t('Keys under this prefix are grouped into locks: a Go Mutex or etcdctl lock named /locks/jobs keeps its keys under /locks/jobs/.'),
    firstPrefixPrompt: () => l10n.t('A prefix to watch for locks, e.g. /locks/ (leave empty to add one later)'),
    prefixExample: '/locks/',
    emptyPrefixWatchesAll: false,
  },
  cli: {
    url: 'etcd: --endpoints H:P[,H:P] (the default store; https:// turns TLS on)',
    list: 'etcd: every key under the prefixes, read at one revision: queue locks (Go Mutex, etcdctl, jetcd), UUID recipes, single-key try-locks and elections; each member\'s owner is its lease, its token the key\'s create revision, its TTL the lease\'s.',
    watch: 'etcd is watched from the revision it was read at, and read again after a broken watch or a compaction.',
    revision: "etcd's",
    acquire: 'etcd: queues for the lock NAME with the key NAME/<lease hex> (compatible with Go concurrency.Mutex, etcdctl lock and jetcd on the same name); a NAME that is a single key (python-etcd3, npm etcd3 Lock) is waited for and put with our lease once deleted, and a free NAME is taken in --layout\'s layout.',
    severalNames: "etcd: on one lease, kept alive for all of them (Go's concurrency.NewSession under several Mutexes): every key is NAME/<that lease hex>, so others see one owner.",
    unlock: "etcd: deletes the holder's key (its lease lives on; 'locklens revoke' ends the lease and all its keys).",
    fencingToken: "the key's create revision",
    lost: 'lease revoked or expired',
  },
};
