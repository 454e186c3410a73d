import type Redis from 'ioredis';
import type { Subscriber } from '../subscriber';
import type { ReadWriteHolds } from './readWriteHold';

/** What every recipe takes a lock through: the connection's clients, its subscriber, and its Redisson threads. */
export interface AcquireContext {
  /** One client per independent instance; the first is the one Redisson locks live on. */
  readonly clients: readonly Redis[];
  readonly subscriber: () => Promise<Subscriber>;
  /** A fresh Redisson-style field `<uuid>:<n>` for this hold. */
  readonly newField: () => string;
  /** The read/write holds taken through this connection, whose Redisson thread a new one on the same name re-enters. */
  readonly readWriteHolds: ReadWriteHolds;
}
