import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdConnection } from '../src/core/etcd/connect';
import { startEtcd } from '../test/harness/etcd';
import { handoffRound, type Tool } from './handoff';
import { ROOT } from './paths';
import { percentile, round } from './stats';

/**
 * The handoff under `strace -f -ttt`: one round of `bench/handoff.ts` for a tool, every contender (and etcd) traced,
 * then, for each handoff, every traced system call between the old holder's `E` stamp and the new holder's `S` stamp,
 * in time order, labelled by who made it. This is how docs/BENCHMARKS.md's timelines were taken.
 *
 *   node out/bench/traceHandoff.js [locklens|etcdctl] [contenders] [handoffs to print]
 *
 * Writes bench/results/trace-<tool>/ (one strace file per contender, `etcd`, and `timeline.txt`). strace slows every
 * traced call: compare the order and the gaps between steps, not the totals, with the untraced figures.
 */
const CONTENDER_CALLS = 'write,writev,read,readv,execve,sendmsg,recvmsg,wait4,exit_group,pipe2,clone,clone3,vfork,munmap,futex';
const ETCD_CALLS = 'write,writev,read,fdatasync,fsync,pwrite64';

async function main(): Promise<void> {
  const tool = (process.argv[2] ?? 'locklens') as Tool;
  const contenders = Number(process.argv[3] ?? 6);
  const show = Number(process.argv[4] ?? 4);
  const dir = join(ROOT, `bench/results/trace-${tool}`);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(dir)) if (/^(c\d+|etcd)(\.\d+)?$/.test(f)) writeFileSync(join(dir, f), '');
  const etcd = await startEtcd();
  const conn = await EtcdConnection.open({ endpoints: [etcd.endpoint] });
  const etcdStrace = spawn('strace', ['-f', '-ttt', '-qq', '-s', '40', '-e', `trace=${ETCD_CALLS}`, '-o', join(dir, 'etcd'), '-p', String(etcd.pid)], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500));
  let n = 0;
  let stamps = '';
  try {
    const gaps = await handoffRound(tool, conn, etcd.endpoint, contenders, `bench/trace/${tool}-${Date.now()}`, {
      wrap: (bin, args) => ['strace', ['-f', '-ttt', '-qq', '-s', '40', '--seccomp-bpf', '-e', `trace=${CONTENDER_CALLS}`, '-o', join(dir, `c${n++}`), bin, ...args]],
      onStamps: (t) => (stamps = t),
    });
    process.stderr.write(`${tool}: ${gaps.length} handoffs under strace, p50 ${round(percentile(gaps, 50))} ms, max ${round(Math.max(...gaps))} ms\n`);
  } finally {
    etcdStrace.kill('SIGINT');
    await new Promise((r) => etcdStrace.once('exit', r));
    conn.close();
    await etcd.dispose();
  }
  const timeline = render(dir, stamps, show);
  writeFileSync(join(dir, 'timeline.txt'), timeline);
  console.log(timeline);
}

interface Call {
  readonly t: number; // seconds since the epoch
  readonly who: string;
  readonly pid: number;
  readonly text: string;
}

function parse(dir: string): Call[] {
  const calls: Call[] = [];
  for (const f of readdirSync(dir)) {
    if (!/^(c\d+|etcd)$/.test(f)) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
      if (m) calls.push({ who: f, pid: Number(m[1]), t: Number(m[2]), text: m[3] });
    }
  }
  return calls.sort((a, b) => a.t - b.t);
}

/** For the first `show` handoffs: every call from the old holder's E stamp (minus 0.2 ms) to the new holder's S. */
function render(dir: string, stamps: string, show: number): string {
  const calls = parse(dir);
  const lines = stamps.trim().split('\n').map((l) => l.split(' '));
  const out: string[] = [];
  // The contender whose process wrote a stamp: its `write(…, "E 17…")`.
  const writer = (kind: string, ns: string) => calls.find((c) => c.who !== 'etcd' && c.text.startsWith('write(') && c.text.includes(`"${kind} ${ns}`))?.who ?? '?';
  let printed = 0;
  for (let i = 1; i + 1 < lines.length && printed < show; i += 2, printed++) {
    const e = Number(lines[i][1]) / 1e9;
    const s = Number(lines[i + 1][1]) / 1e9;
    const old = writer('E', lines[i][1]);
    const next = writer('S', lines[i + 1][1]);
    out.push(`\n=== handoff ${printed + 1}: ${round((s - e) * 1000)} ms, old holder ${old}, new holder ${next} (ms after E)`);
    for (const c of calls) {
      if (c.t < e - 0.0002 || c.t > s + 0.0002) continue;
      if (/^(futex|read|recvmsg)\(.*EAGAIN|resumed> \) += -1 EAGAIN/.test(c.text)) continue;
      const role = c.who === old ? 'OLD ' : c.who === next ? 'NEW ' : c.who === 'etcd' ? 'etcd' : c.who;
      out.push(`${((c.t - e) * 1000).toFixed(3).padStart(8)}  ${role.padEnd(4)} ${String(c.pid).padStart(7)}  ${c.text.slice(0, 110)}`);
    }
  }
  return out.join('\n') + '\n';
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
