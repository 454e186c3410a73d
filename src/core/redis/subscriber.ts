/**
 * One pub/sub connection shared by everything that listens (a watch's notifications, waiters woken by Redisson's
 * unlock messages): a connection in subscribe mode can run nothing else, and each PSUBSCRIBE is counted so the last
 * listener to leave unsubscribes. ioredis resubscribes by itself after a reconnect.
 */
import type Redis from 'ioredis';
import { keyId } from '../keys';
import type { Disposable } from '../emitter';

type Listener = (channel: Buffer, message: Buffer) => void;
interface Entry {
  readonly name: Buffer;
  readonly listeners: Set<Listener>;
}

function patternId(pattern: string | Uint8Array): string {
  return typeof pattern === 'string' ? pattern : Buffer.from(pattern).toString('utf8');
}

export class Subscriber implements Disposable {
  private readonly patterns = new Map<string, Entry>();
  private readonly channels = new Map<string, Entry>();

  constructor(readonly client: Redis) {
    // ioredis hands the pattern back as a UTF-8 decoded string (lossy for binary bytes), so patterns are filed under
    // that same decoding; listeners check the channel bytes themselves.
    client.on('pmessageBuffer', (pattern: string | Buffer, channel: Buffer, message: Buffer) => {
      for (const l of [...(this.patterns.get(patternId(pattern))?.listeners ?? [])]) l(channel, message);
    });
    client.on('messageBuffer', (channel: Buffer, message: Buffer) => {
      for (const l of [...(this.channels.get(keyId(channel))?.listeners ?? [])]) l(channel, message);
    });
  }

  /** Resolves once the server confirmed the subscription. */
  async psubscribe(pattern: Buffer, listener: Listener): Promise<Disposable> {
    return this.add(this.patterns, patternId(pattern), pattern, listener, (p) => this.client.psubscribe(p as unknown as string), (p) => this.client.punsubscribe(p as unknown as string));
  }

  async subscribe(channel: Buffer, listener: Listener): Promise<Disposable> {
    return this.add(this.channels, keyId(channel), channel, listener, (c) => this.client.subscribe(c as unknown as string), (c) => this.client.unsubscribe(c as unknown as string));
  }

  private async add(
    table: Map<string, Entry>,
    id: string,
    name: Buffer,
    listener: Listener,
    on: (name: Buffer) => Promise<unknown>,
    off: (name: Buffer) => Promise<unknown>,
  ): Promise<Disposable> {
    let entry = table.get(id);
    if (!entry) {
      entry = { name, listeners: new Set() };
      table.set(id, entry);
    }
    entry.listeners.add(listener);
    try {
      if (entry.listeners.size === 1) await on(name);
    } catch (e) {
      entry.listeners.delete(listener);
      if (entry.listeners.size === 0) table.delete(id);
      throw e;
    }
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        const e = table.get(id);
        if (!e) return;
        e.listeners.delete(listener);
        if (e.listeners.size === 0) {
          table.delete(id);
          off(name).catch(() => undefined);
        }
      },
    };
  }

  dispose(): void {
    this.patterns.clear();
    this.channels.clear();
    this.client.disconnect();
  }
}
