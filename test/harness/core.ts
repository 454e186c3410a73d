import { EtcdConnection } from '../../src/core/etcd/connect';
import type { ConnectionProfile } from '../../src/core/profile';
import { Session } from '../../src/core/etcd/session';

/** Opens connections and sessions for a test and closes all of them in `dispose`, even after a failure. */
export class Scope {
  private readonly cleanups: (() => unknown)[] = [];

  async connect(endpoints: string | string[], profile: Partial<ConnectionProfile> = {}): Promise<EtcdConnection> {
    const conn = await EtcdConnection.open({ endpoints: Array.isArray(endpoints) ? endpoints : [endpoints], ...profile });
    this.cleanups.push(() => conn.close());
    return conn;
  }

  async session(conn: EtcdConnection, ttl = 10): Promise<Session> {
    const s = await Session.create(conn, ttl);
    this.cleanups.push(() => s.revoke().catch(() => s.dispose()));
    return s;
  }

  defer(cleanup: () => unknown): void {
    this.cleanups.push(cleanup);
  }

  async dispose(): Promise<void> {
    for (const c of this.cleanups.splice(0).reverse()) await c();
  }
}
