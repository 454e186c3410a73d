import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy a test can cut, as a network partition would: while cut, every connection through it is dropped
 * and new ones are closed at once, and the server behind it hears nothing from those clients (so their sessions
 * expire, which no client-side trick does reliably: a client reconnects to its session faster than another can close
 * it). `restore` lets connections through again. `silence` is the other kind of partition: the connections stay open
 * but nothing passes either way, so neither end sees a close (a cable pulled, a firewall dropping packets).
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private cutOff = false;
  private silent = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => {
      if (!proxy || proxy.cutOff) return void client.destroy();
      const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
      for (const s of [client, upstream]) {
        proxy.sockets.add(s);
        s.once('close', () => proxy!.sockets.delete(s));
        s.on('error', () => undefined);
      }
      if (proxy.silent) for (const s of [client, upstream]) s.pause();
      else client.pipe(upstream).pipe(client);
      // A silenced connection's close does not pass either: a partition hides it too.
      client.once('close', () => proxy!.silent || upstream.destroy());
      upstream.once('close', () => proxy!.silent || client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.sockets) s.destroy();
  }

  /** Stops passing bytes on every connection, open and new, without closing any. */
  silence(): void {
    this.silent = true;
    for (const s of this.sockets) {
      s.unpipe();
      s.pause();
    }
  }

  restore(): void {
    this.cutOff = false;
  }

  async dispose(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
