import type { Proc, Procs } from './cli';

/**
 * `locklens acquire FIRST GATE SECOND -- echo WORD >> RAN`: one owner that holds FIRST, waits at GATE (a lock the test
 * holds with a client of the store's own) and only then asks for SECOND. Two of these in opposite orders, their gates
 * opened once both hold their first, are a deadlock whatever the machine's speed: neither can reach its second before
 * the other holds it.
 */
export class AcquirePair {
  readonly proc: Proc;

  constructor(procs: Procs, connection: readonly string[], readonly first: string, gate: string, readonly second: string, ran: string, word: string) {
    this.proc = procs.locklens(['acquire', first, gate, second, ...connection, '--', 'sh', '-c', 'echo "$2" >> "$1"', 'sh', ran, word]);
  }

  /** Once it holds its first: the owner it holds it as (etcd: the lease hex; ZooKeeper: the session). */
  async holdsFirst(): Promise<string> {
    const pattern = new RegExp(`holding ${this.first}: \\S+, .*, owner (\\S+)\n`);
    return this.proc.until((p) => pattern.exec(p.stderr)?.[1], `holds ${this.first}`);
  }

  /** Once it holds its gate and is queued for its second. */
  waitsForSecond(): Promise<true> {
    return this.proc.until((p) => p.stderr.includes(`waiting for ${this.second}/`), `waits for ${this.second}`);
  }
}
