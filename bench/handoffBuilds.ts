import { loadavg } from 'node:os';
import { EtcdConnection } from '../src/core/etcd/connect';
import { startEtcd } from '../test/harness/etcd';
import { handoffRound } from './handoff';
import { percentile, round } from './stats';

/**
 * etcd's handoff (bench/handoff.ts) for several LockLens builds against etcdctl, in interleaved rounds on one etcd: how
 * a change to the handoff path is measured. From run to run the p50 of one build moves by about ±1 ms on a quiet
 * machine and by several ms while other processes share its cores, more than most changes move it, so builds are only
 * compared within one run, each round's order reversed from the last.
 *
 *   node out/bench/handoffBuilds.js CONTENDERS ROUNDS NAME=DIST[:VAR=VALUE,...]...
 *
 * DIST is a build's `dist` directory (copy one away before changing the code); the variables are set for that build's
 * contenders only, so that one build can also be run with an experiment switched on.
 */
interface Build {
  readonly name: string;
  readonly cli?: string;
  readonly env: Record<string, string>;
}

function parseBuild(spec: string): Build {
  const [name, rest] = splitOnce(spec, '=');
  if (!name || !rest) throw new Error(`${spec}: expected NAME=DIST[:VAR=VALUE,...]`);
  const [dist, vars] = splitOnce(rest, ':');
  const env = Object.fromEntries((vars ? vars.split(',') : []).map((v) => splitOnce(v, '=')));
  return { name, cli: `${dist}/locklens.js`, env };
}

function splitOnce(text: string, separator: string): [string, string] {
  const i = text.indexOf(separator);
  return i < 0 ? [text, ''] : [text.slice(0, i), text.slice(i + 1)];
}

async function main(): Promise<void> {
  const [contenders, rounds, ...specs] = process.argv.slice(2);
  if (!specs.length) throw new Error('usage: handoffBuilds.js CONTENDERS ROUNDS NAME=DIST[:VAR=VALUE,...]...');
  const builds: Build[] = [{ name: 'etcdctl', env: {} }, ...specs.map(parseBuild)];
  const samples = new Map(builds.map((b) => [b.name, [] as number[]]));
  const etcd = await startEtcd();
  const conn = await EtcdConnection.open({ endpoints: [etcd.endpoint] });
  const load = loadavg()[0];
  try {
    for (let r = 0; r < Number(rounds); r++) {
      for (const b of r % 2 ? [...builds].reverse() : builds) {
        const tool = b.cli ? 'locklens' : 'etcdctl';
        const env = { ...process.env, ETCDCTL_API: '3', ...b.env };
        samples.get(b.name)!.push(...(await handoffRound(tool, conn, etcd.endpoint, Number(contenders), `bench/builds/${b.name}-${r}`, { cli: b.cli, env })));
      }
    }
  } finally {
    conn.close();
    await etcd.dispose();
  }
  const reference = samples.get('etcdctl')!;
  console.log(`${contenders} contenders, ${rounds} rounds; load average ${round(load)} at the start, ${round(loadavg()[0])} at the end`);
  for (const [name, s] of samples) {
    const ratio = (q: number) => round(percentile(s, q) / percentile(reference, q));
    console.log(`${name.padEnd(12)} ${s.length} handoffs  p50 ${round(percentile(s, 50))} ms  p99 ${round(percentile(s, 99))} ms  ratio ${ratio(50)} / ${ratio(99)}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
