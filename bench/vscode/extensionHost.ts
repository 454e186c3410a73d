import { writeFileSync } from 'node:fs';
import * as vscode from 'vscode';
import type { LockLensApi } from '../../src/extension/extension';
import type { LockTreeNode } from '../../src/extension/tree/nodes';
import type { EtcdLockWatch } from '../../src/core/etcd/liveWatch';
import type { EtcdBackend } from '../../src/core/etcd/etcdBackend';

/**
 * The `extension` benchmark's extensionTestsPath module (out/bench/vscode/extensionHost.js): VS Code's extension host
 * calls `run()` with LockLens installed from the repo but not yet activated. It measures, in this real extension host:
 *
 * - activation: `getExtension('locklens.locklens').activate()` from cold (loading dist/extension.js included);
 * - load: from adding a connection that watches LOCKLENS_BENCH_PREFIX (where bench/scenarios.ts put the locks) until
 *   the tree lists every lock;
 * - render: `getChildren(prefix)` plus `getTreeItem` of every lock row, as VS Code asks when the view shows them
 *   (first walk, then the median of 5 more);
 * - burst: LOCKLENS_BENCH_BURST puts to the locks' keys (their leases kept), 125 a transaction, all sent at once; how
 *   many times `tree.onDidChangeTreeData` fires until the model has caught up, and how long that takes.
 *
 * The figures go as JSON to LOCKLENS_BENCH_RESULT; run() throws on anything unexpected, so the run fails.
 */

const CONNECTION = 'bench';
/** etcd allows 128 operations per transaction. */
const PER_TXN = 125;

export interface ExtensionHostFigures {
  readonly was_active: boolean;
  readonly activation_ms: number;
  readonly locks: number;
  readonly load_ms: number;
  readonly render_first_ms: number;
  readonly render_ms: number;
  readonly burst_writes: number;
  readonly burst_ms: number;
  readonly burst_fires: number;
  readonly render_after_burst_ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (bench/scenarios.ts sets it)`);
  return v;
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, pollMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms`);
    await sleep(pollMs);
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const round = (v: number) => Math.round(v * 10) / 10;

export async function run(): Promise<void> {
  const endpoint = env('LOCKLENS_BENCH_ENDPOINT');
  const prefix = env('LOCKLENS_BENCH_PREFIX');
  const locks = Number(env('LOCKLENS_BENCH_LOCKS'));
  const burst = Number(env('LOCKLENS_BENCH_BURST'));
  const resultFile = env('LOCKLENS_BENCH_RESULT');

  const extension = vscode.extensions.getExtension<LockLensApi>('locklens.locklens');
  if (!extension) throw new Error('locklens.locklens is not installed in this extension host');
  const wasActive = extension.isActive;
  let t0 = performance.now();
  const api = await extension.activate();
  const activationMs = performance.now() - t0;

  const { tree, registry } = api;
  const prefixNode = (): LockTreeNode | undefined => {
    const connection = tree.getChildren().find((n) => n.connection.name === CONNECTION);
    // A connection's rows are its prefixes, or a hint without one. (This file is compiled apart from the extension's
    // bundle, whose node classes are not its own: `instanceof` cannot tell rows apart here.)
    return connection && tree.getChildren(connection).find((n) => 'prefix' in n);
  };
  /** Every lock row as VS Code asks for it: the prefix's children, then each one's TreeItem. */
  const render = (): number => {
    const node = prefixNode();
    if (!node) throw new Error('no prefix row');
    const start = performance.now();
    const rows = tree.getChildren(node);
    for (const row of rows) tree.getTreeItem(row);
    const ms = performance.now() - start;
    if (rows.length !== locks) throw new Error(`${rows.length} lock rows, expected ${locks}`);
    return ms;
  };

  try {
    t0 = performance.now();
    await vscode.commands.executeCommand('locklens.addConnection', { name: CONNECTION, endpoints: [endpoint], prefixes: [prefix] });
    await waitFor(
      () => {
        const node = prefixNode();
        return !!node && tree.getChildren(node).length === locks;
      },
      60_000,
      `${locks} lock rows`,
    );
    const loadMs = performance.now() - t0;

    const renderFirst = render();
    const renders = Array.from({ length: 5 }, render);

    const connection = registry.get(CONNECTION)!;
    const etcd = (connection.backend as EtcdBackend).connection;
    const keys = connection.watch!.locks().map((l) => l.holder!.key);
    let fires = 0;
    const listener = tree.onDidChangeTreeData(() => fires++);
    let burstMs: number;
    try {
      t0 = performance.now();
      const txns: Promise<unknown>[] = [];
      for (let i = 0; i < burst; i += PER_TXN) {
        const success = [];
        for (let k = i; k < Math.min(burst, i + PER_TXN); k++) {
          success.push({ request_put: { key: keys[k % keys.length], value: Buffer.from(`w${k}`), ignore_lease: true } });
        }
        txns.push(etcd.client.kv.txn({ success }));
      }
      await Promise.all(txns);
      await (connection.watch as EtcdLockWatch).live.sync(60_000);
      burstMs = performance.now() - t0;
      // The tree redraws once per turn of the event loop: let the last one out.
      await sleep(50);
    } finally {
      listener.dispose();
    }
    const figures: ExtensionHostFigures = {
      was_active: wasActive,
      activation_ms: round(activationMs),
      locks,
      load_ms: round(loadMs),
      render_first_ms: round(renderFirst),
      render_ms: round(median(renders)),
      burst_writes: burst,
      burst_ms: round(burstMs),
      burst_fires: fires,
      render_after_burst_ms: round(render()),
    };
    writeFileSync(resultFile, JSON.stringify(figures, null, 2));
    console.log(`extension bench: ${JSON.stringify(figures)}`);
  } finally {
    await vscode.workspace.getConfiguration('locklens').update('connections', undefined, vscode.ConfigurationTarget.Global);
  }
}
