/**
 * What the nodes of a Redis watch push: keyspace notifications where the server has them on (they are node-local, so
 * every node is subscribed to), and Redisson's unlock messages, which every Redisson lock publishes without any
 * configuration and whose channel names the lock. Which of the two a node sends decides whether a watch can rely on
 * notifications or must poll.
 */
import type { Disposable } from '../emitter';
import { errorMessage } from '../errors';
import { globPrefix } from './keyspaceReader';
import { redissonNameFromPrefixed } from './redissonNames';
import type { Subscriber } from './subscriber';
import type { RedisNode, Topology } from './topology';

const FAIR_WAKE_SUFFIX = /:[0-9a-f-]{36}:\d+$/;

/**
 * Whether `notify-keyspace-events` sends keyspace events for generic, string, hash, sorted set (redis-semaphore's
 * permits) and expired events.
 */
export function keyspaceNotificationsOn(flags: string): boolean {
  if (!flags.includes('K')) return false;
  const all = flags.includes('A');
  return ['g', '$', 'h', 'z', 'x'].every((c) => all || flags.includes(c));
}

/**
 * Whether `notify-keyspace-events` sends `expired` key-event notifications (`E` with `x`, or `A` which includes it):
 * they tell an expiry from a delete. Keyspace notifications that are on (above) tell it too, by their message.
 */
export function expiredEventsOn(flags: string): boolean {
  return flags.includes('E') && (flags.includes('x') || flags.includes('A'));
}

/**
 * The lock names a Redisson unlock message's channel may stand for: `redisson_lock__channel:{name}`, a fair lock's
 * `redisson_lock__channel:{name}:<uuid>:<thread>` (the waiter it wakes), `redisson_rwlock:{name}`. Both readings of a
 * channel that ends like a fair wake-up are given: reading a name too many costs one key.
 */
export function unlockedNames(channel: Buffer): Buffer[] {
  const plain = redissonNameFromPrefixed('redisson_lock__channel', channel) ?? redissonNameFromPrefixed('redisson_rwlock', channel);
  if (!plain) return [];
  const out = [plain];
  const wake = FAIR_WAKE_SUFFIX.exec(channel.toString('latin1'));
  if (wake && channel.toString('latin1').startsWith('redisson_lock__channel:')) {
    const name = redissonNameFromPrefixed('redisson_lock__channel', channel.subarray(0, channel.length - wake[0].length));
    if (name && !name.equals(plain)) out.push(name);
  }
  return out;
}

export interface SubscriptionHandlers {
  /** A Redisson unlock message came on `channel`. */
  readonly unlocked: (channel: Buffer) => void;
  /** A keyspace notification said `key` changed. */
  readonly touched: (key: Buffer) => void;
  /** The server said `key` expired (it was not deleted). */
  readonly expired: (key: Buffer) => void;
  /** A detection ended: whether notifications are on, or CONFIG is refused, may have changed. */
  readonly detected: () => void;
  readonly log?: (line: string) => void;
}

interface NodeSubscription {
  readonly subscriber: Subscriber;
  readonly subscriptions: Disposable[];
  notifications: boolean;
  /** Subscribed to its `expired` key events. */
  expiredEvents: boolean;
}

export class NodeSubscriptions {
  /** Per node label: its subscriber and what it is subscribed to. */
  private readonly subscribers = new Map<string, NodeSubscription>();
  /** The detections in flight, one after the other (see detect). */
  private detection: Promise<void> = Promise.resolve();
  private notificationsOn = false;
  private expiriesTold = false;
  private refused = false;
  private stopped = false;

  constructor(
    private readonly topology: Topology,
    private readonly openSubscriber: (node: RedisNode) => Promise<Subscriber>,
    private readonly prefixes: readonly Buffer[],
    private readonly handlers: SubscriptionHandlers,
  ) {}

  /** Every node sends keyspace notifications and is subscribed to them: changes need not be polled for. */
  get notifications(): boolean {
    return this.notificationsOn;
  }

  /** Every node says when a key expires (key-event or keyspace notifications with `x`), and is heard: a key gone without it was deleted. */
  get expiryEvents(): boolean {
    return this.expiriesTold;
  }

  /**
   * Some node refused `CONFIG GET` (managed services, a renamed command): whether it sends keyspace notifications
   * cannot be read, so everything is polled, and notifications, if it sends them, are followed as well.
   */
  get configRefused(): boolean {
    return this.refused;
  }

  /**
   * Notifications on or off (CONFIG may be forbidden: then polling, quietly), and the subscriptions that go with it,
   * on every node: keyspace notifications are node-local, and each redlock instance publishes its own Redisson
   * unlocks. Notifications count only when every node has them on and is subscribed; otherwise everything is polled.
   */
  detect(): Promise<void> {
    // One at a time: two at once (several nodes reconnecting, a burst of +node events) would each open a subscriber
    // for a node that has none, and the one filed second would leave the first connected for ever.
    const run = this.detection.then(() => this.detectNow());
    this.detection = run.catch(() => undefined);
    return run;
  }

  private async detectNow(): Promise<void> {
    const nodes = this.topology.nodes();
    const results = await Promise.all(nodes.map((n) => this.detectNode(n)));
    if (this.stopped) return;
    this.expiriesTold = nodes.length > 0 && nodes.every((n) => this.subscribers.get(n.label)?.expiredEvents ?? false);
    this.refused = results.some((r) => r === 'unreadable');
    for (const label of [...this.subscribers.keys()]) {
      if (nodes.some((n) => n.label === label)) continue;
      // A master that left the cluster.
      const gone = this.subscribers.get(label)!;
      this.subscribers.delete(label);
      gone.subscriptions.forEach((d) => d.dispose());
      gone.subscriber.dispose();
    }
    this.notificationsOn = results.length > 0 && results.every((r) => r === 'on');
    this.handlers.detected();
  }

  /** Whether `node` sends keyspace notifications (`unreadable`: CONFIG refused), subscribing to what it sends. */
  private async detectNode(node: RedisNode): Promise<'on' | 'off' | 'unreadable'> {
    let mode: 'on' | 'off' | 'unreadable' = 'off';
    let expiredEvents = false;
    try {
      const reply = (await node.client.config('GET', 'notify-keyspace-events')) as string[];
      if (keyspaceNotificationsOn(reply?.[1] ?? '')) mode = 'on';
      expiredEvents = expiredEventsOn(reply?.[1] ?? '');
    } catch (e) {
      mode = 'unreadable';
      this.handlers.log?.(`Redis CONFIG GET refused at ${node.label} (${errorMessage(e)}): polling, and following keyspace notifications if it sends them`);
    }
    try {
      let entry = this.subscribers.get(node.label);
      if (!entry) {
        const subscriber = await this.openSubscriber(node);
        const redisson = (channel: Buffer) => this.handlers.unlocked(channel);
        try {
          const subscriptions = [
            await subscriber.psubscribe(Buffer.from('redisson_lock__channel:*'), redisson),
            await subscriber.psubscribe(Buffer.from('redisson_rwlock:*'), redisson),
          ];
          entry = { subscriber, subscriptions, notifications: false, expiredEvents: false };
        } catch (e) {
          // Not filed half-subscribed: the next detection opens a fresh one.
          subscriber.dispose();
          throw e;
        }
        if (this.stopped) {
          subscriber.dispose();
          return 'off';
        }
        this.subscribers.set(node.label, entry);
      }
      if (mode !== 'off' && !entry.notifications) {
        const base = Buffer.from(`__keyspace@${node.spec.endpoint.db}__:`);
        const onKey = (channel: Buffer, message: Buffer) => {
          const key = channel.subarray(base.length);
          if (message.toString('latin1') === 'expired') this.handlers.expired(key);
          this.handlers.touched(key);
        };
        for (const p of [...this.prefixes.map(globPrefix), Buffer.from('redisson_lock_queue:*')]) {
          entry.subscriptions.push(await entry.subscriber.psubscribe(Buffer.concat([base, p]), onKey));
        }
        entry.notifications = true;
      }
      if (expiredEvents && !entry.expiredEvents) {
        // The channel carries every expiry of the database, not only the prefixes': the watch drops the others.
        entry.subscriptions.push(await entry.subscriber.subscribe(Buffer.from(`__keyevent@${node.spec.endpoint.db}__:expired`), (_, key) => this.handlers.expired(key)));
      }
      // Keyspace notifications that are on include `x`: their messages say which changes were expiries.
      entry.expiredEvents = expiredEvents || mode === 'on';
      return mode;
    } catch (e) {
      this.handlers.log?.(`Redis subscribe failed at ${node.label} (${errorMessage(e)}): polling`);
      return mode === 'unreadable' ? mode : 'off';
    }
  }

  dispose(): void {
    this.stopped = true;
    for (const entry of this.subscribers.values()) {
      entry.subscriptions.forEach((s) => s.dispose());
      entry.subscriber.dispose();
    }
    this.subscribers.clear();
  }
}
