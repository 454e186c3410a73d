/**
 * Where a connection's keys live, and how to read all of them. Three shapes:
 * - one instance;
 * - several independent instances (redlock: never replicas): every instance is read, in parallel, and the reads are
 *   merged per lock with each member's agreement (see merge.ts); an instance that is down counts as not agreeing;
 * - a Redis Cluster, detected on open (`INFO cluster` says `cluster_enabled:1`, nothing to configure): every master
 *   is scanned on its own connection (SCAN is node-local), its keys read there with pipelines (a key lives on the
 *   master that SCAN found it on), and keyed commands (acquire, force-release, Redisson's `{name}`-tagged scripts)
 *   go through ioredis's Cluster, which routes them by slot.
 */
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { LockLensError } from '../errors';
import type { ClientSpec } from './connect';
import { readLocks, readSnapshot, recognizeSnapshot, storeError, type ReadOptions, type ReadPlan } from './keyspaceReader';
import type { ReadCost } from './pollPacing';
import { mergeInstances, mergeNodes } from './merge';
import type { Recognized, TtlSource } from './recognize';
import { SemaphoreCounters } from './semaphores';

export interface RedisNode {
  /** host:port (and /db), as messages and `quorum.instances` show it. */
  readonly label: string;
  readonly client: Redis;
  /** How to open another connection to it (a subscriber). */
  readonly spec: ClientSpec;
}

export type TopologyKind = 'single' | 'redlock' | 'cluster';

export interface Unreachable {
  readonly label: string;
  readonly error: LockLensError;
}

export interface ReadResult {
  readonly recognized: Recognized;
  /** Nodes that could not be read this time (redlock instances, cluster masters); never all of them. */
  readonly down: readonly Unreachable[];
  /** A full read's cost: the keys walked on every node read (summed), the time of the slowest node. */
  readonly cost?: ReadCost;
}

/** The nodes are read in parallel: the keys add up, the time is the slowest node's. */
function totalCost(costs: readonly ReadCost[]): ReadCost | undefined {
  if (costs.length === 0) return undefined;
  const known = costs.every((c) => c.keys !== undefined);
  return {
    keys: known ? costs.reduce((sum, c) => sum + c.keys!, 0) : undefined,
    ms: Math.max(...costs.map((c) => c.ms)),
    totalMs: Math.max(...costs.map((c) => c.totalMs)),
  };
}

/** host:port, an IPv6 host in brackets, as labels and messages show a node. */
function nodeLabel(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Returns the PTTL of KEYS[1] only while it still holds ARGV[1]; -2 when it holds something else or nothing. */
const PTTL_IF_VALUE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pttl', KEYS[1]) end return -2`;

export class Topology {
  /** The names its reads saw as RSemaphore counters, which stay so between their waiters (semaphores.ts). */
  private readonly counters = new SemaphoreCounters();

  private constructor(
    readonly kind: TopologyKind,
    private readonly instances: readonly RedisNode[],
    readonly cluster?: Cluster,
    private readonly seed?: ClientSpec,
  ) {}

  static ofInstances(nodes: readonly RedisNode[]): Topology {
    return new Topology(nodes.length > 1 ? 'redlock' : 'single', nodes);
  }

  static ofCluster(cluster: Cluster, seed: ClientSpec): Topology {
    return new Topology('cluster', [], cluster, seed);
  }

  /** The instances, or the cluster's masters as ioredis knows them now (connected). */
  nodes(): RedisNode[] {
    if (!this.cluster) return [...this.instances];
    return this.cluster.nodes('master').map((client) => {
      const host = client.options.host ?? '127.0.0.1';
      const port = client.options.port ?? 6379;
      const label = nodeLabel(host, port);
      const seed = this.seed!;
      return { label, client, spec: { ...seed, endpoint: { ...seed.endpoint, host, port, db: 0, label } } };
    });
  }

  /**
   * A cluster's masters that serve slots in its slot map but have no connection: a master that died drops out of
   * ioredis's pool at once, and its locks would silently go missing from a read of the others. Each is reported as
   * down, and the slot map is asked for again, so that the replica promoted in its place is found (ioredis does not
   * refresh it by itself) and connected (`+node`).
   */
  private missingMasters(connected: readonly RedisNode[]): Unreachable[] {
    const cluster = this.cluster;
    if (!cluster) return [];
    const slots = (cluster as unknown as { slots: (string[] | undefined)[] }).slots;
    const expected = new Set<string>();
    for (const owners of slots) if (owners?.[0]) expected.add(owners[0]);
    const have = new Set(connected.map((n) => `${n.client.options.host}:${n.client.options.port}`));
    const missing = [...expected].filter((key) => !have.has(key));
    if (missing.length) cluster.refreshSlotsCache();
    return missing.map((key) => {
      const at = key.lastIndexOf(':');
      const label = nodeLabel(key.slice(0, at), Number(key.slice(at + 1)));
      return { label, error: new LockLensError('UNREACHABLE', `the Redis Cluster master ${label} is not connected (down, or failing over)`) };
    });
  }

  /** Where single-key commands go: the only instance, or the cluster (routed by slot). Not used for redlock writes. */
  get router(): Redis {
    return (this.cluster as unknown as Redis | undefined) ?? this.instances[0].client;
  }

  /** Every instance's client (redlock writes go to all of them); the cluster as one routed client. */
  get writeClients(): readonly Redis[] {
    return this.cluster ? [this.router] : this.instances.map((n) => n.client);
  }

  /** How many nodes a status counts: "1 of 3 instances". */
  noun(n: number): string {
    return this.kind === 'cluster' ? (n === 1 ? 'master' : 'masters') : n === 1 ? 'instance' : 'instances';
  }

  /** Reads every node in parallel. Throws when none can be read; a single instance that fails throws. */
  async read(prefixes: readonly Buffer[], options: ReadOptions = {}, plan?: ReadPlan): Promise<ReadResult> {
    const nodes = this.nodes();
    if (nodes.length === 0) throw new LockLensError('UNREACHABLE', 'the Redis Cluster has no reachable master');
    const read = await this.gather(nodes, (n) => readSnapshot(n.client, prefixes, options, plan), prefixes, { prefixes });
    const missing = this.missingMasters(nodes);
    return missing.length ? { ...read, down: [...read.down, ...missing] } : read;
  }

  /** Reads the named locks again. Undefined for a cluster: its names live on different masters, so read it whole. */
  async readNames(names: readonly Buffer[], prefixes: readonly Buffer[]): Promise<ReadResult | undefined> {
    if (this.cluster) return undefined;
    return this.gather(this.nodes(), (n) => readLocks(n.client, names), prefixes, { names });
  }

  /** `scope`: what the read covers, which the names seen as RSemaphore counters are updated over. */
  private async gather(nodes: readonly RedisNode[], readOne: (n: RedisNode) => ReturnType<typeof readSnapshot>, prefixes: readonly Buffer[], scope: Parameters<SemaphoreCounters['note']>[1]): Promise<ReadResult> {
    const settled = await Promise.allSettled(nodes.map(readOne));
    const now = Date.now();
    const down: Unreachable[] = [];
    const reads = settled.map((r, i) => {
      if (r.status === 'fulfilled') return recognizeSnapshot(r.value, prefixes, now, this.counters);
      down.push({ label: nodes[i].label, error: storeError(r.reason) });
      return undefined;
    });
    this.counters.note(reads.flatMap((r) => r?.locks ?? []), scope);
    if (down.length === nodes.length) throw down[0].error;
    const cost = totalCost(settled.flatMap((r) => (r.status === 'fulfilled' && r.value.cost ? [r.value.cost] : [])));
    const labels = nodes.map((n) => n.label);
    switch (this.kind) {
      case 'single':
        return { recognized: reads[0]!, down, cost };
      case 'redlock':
        return { recognized: mergeInstances(reads, labels), down, cost };
      case 'cluster': {
        const up = reads.map((r, i) => [r, labels[i]] as const).filter((x): x is readonly [Recognized, string] => !!x[0]);
        return { recognized: mergeNodes(up.map((x) => x[0]), up.map((x) => x[1])), down, cost };
      }
    }
  }

  /**
   * The PTTL of each keyed source: asked where it lives (`nodes`; none: the first node), the lowest answer among its
   * nodes (redlock: validity ends with the earliest expiry), -1 when none expires, -2 when it is gone everywhere.
   * A source with a `value` counts only where the key still holds it. Undefined: none of its nodes answered.
   */
  async pttls(sources: readonly TtlSource[]): Promise<(number | undefined)[]> {
    const nodes = this.nodes();
    const byLabel = new Map(nodes.map((n) => [n.label, n] as const));
    const perNode = new Map<RedisNode, { source: number; key: Buffer; value?: Buffer }[]>();
    sources.forEach((s, i) => {
      const where = s.nodes?.length ? s.nodes.map((l) => byLabel.get(l)).filter((n): n is RedisNode => !!n) : nodes.slice(0, 1);
      for (const n of where) {
        let list = perNode.get(n);
        if (!list) perNode.set(n, (list = []));
        list.push({ source: i, key: s.keys[0], value: s.value });
      }
    });
    const answers: number[][] = sources.map(() => []);
    let failures = 0;
    await Promise.all(
      [...perNode.entries()].map(async ([node, asks]) => {
        const p = node.client.pipeline();
        for (const a of asks) {
          if (a.value) p.eval(PTTL_IF_VALUE, 1, a.key, a.value);
          else p.pttl(a.key);
        }
        try {
          const replies = ((await p.exec()) ?? []) as [Error | null, unknown][];
          asks.forEach((a, j) => {
            const [err, v] = replies[j] ?? [new Error('no reply'), null];
            if (!err && typeof v === 'number') answers[a.source].push(v);
          });
        } catch {
          failures++;
        }
      }),
    );
    if (failures === perNode.size && perNode.size > 0) throw new LockLensError('UNREACHABLE', 'no Redis node answered PTTL');
    return answers.map((list) => {
      if (list.length === 0) return undefined;
      const live = list.filter((v) => v >= 0);
      if (live.length) return Math.min(...live);
      if (list.includes(-1)) return -1;
      return -2;
    });
  }

  close(): void {
    if (this.cluster) this.cluster.disconnect();
    for (const n of this.instances) n.client.disconnect();
  }
}
