import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../demo/codeServer';
import { show } from '../harness/cli';
import { PROMETHEUS_DEPLOY, RULES_FILE, runTool } from '../harness/prometheus';

/**
 * The shipped deploy files, checked by the tools that will read them: Debian's promtool (the alert rules, their unit
 * tests in locklens-rules.test.yml, the scrape config), amtool (the Alertmanager example) and systemd-analyze (the
 * unit). A failure shows the tool's own output.
 */

const SCRAPE_FILE = join(PROMETHEUS_DEPLOY, 'scrape.yml');
const UNIT_FILE = join(repoRoot, 'deploy/systemd/locklens.service');

interface Rule {
  readonly alert: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

function shippedRules(): Rule[] {
  return (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
}

async function passes(command: string, args: readonly string[], cwd?: string): Promise<void> {
  const result = await runTool(command, args, cwd);
  assert.equal(result.code, 0, `${command} ${args.join(' ')}\n${show(result)}`);
}

/** A temporary directory for the duration of `use`. */
async function inTempDir(use: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'locklens-deploy-'));
  try {
    await use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the alert rules pass promtool check rules', () => passes('promtool', ['check', 'rules', RULES_FILE]));

test("the alert rules' unit tests pass promtool test rules", () => passes('promtool', ['test', 'rules', 'locklens-rules.test.yml'], PROMETHEUS_DEPLOY));

test('every alert rule has unit tests, a severity and annotations saying what and where', () => {
  const tests = readFileSync(join(PROMETHEUS_DEPLOY, 'locklens-rules.test.yml'), 'utf8');
  const tested = new Set([...tests.matchAll(/^\s*alertname:\s*(\S+)/gm)].map((m) => m[1]));
  const rules = shippedRules();
  assert.deepEqual(
    rules.map((r) => r.alert),
    ['LockLensLockHeldTooLong', 'LockLensLockNotRenewed', 'LockLensHolderNeverExpires', 'LockLensDeadlock', 'LockLensStoreDown', 'LockLensDown'],
  );
  for (const rule of rules) {
    assert.ok(tested.has(rule.alert), `${rule.alert} has no alert_rule_test in locklens-rules.test.yml`);
    assert.match(rule.labels?.severity ?? '', /^(warning|critical)$/, `${rule.alert}'s severity`);
    for (const annotation of ['summary', 'description', 'inspect']) assert.ok(rule.annotations?.[annotation], `${rule.alert} has no ${annotation}`);
  }
});

test('the scrape config is a valid Prometheus config that loads the rules', () => passes('promtool', ['check', 'config', SCRAPE_FILE]));

test("the scrape config's commented bearer token and TLS settings are valid once uncommented", () =>
  inTempDir(async (dir) => {
    // Only the job's indented lines are settings; the comments at the top are prose.
    const uncommented = readFileSync(SCRAPE_FILE, 'utf8').replace(/^(\s+)# (\s*[a-z_]+:.*)$/gm, '$1$2');
    const files = [...uncommented.matchAll(/\/etc\/prometheus\/([\w.-]+)/g)].map((m) => m[1]);
    assert.deepEqual(files, ['locklens-token', 'locklens-ca.pem'], 'the settings the scrape config shows as comments');
    for (const file of files) writeFileSync(join(dir, file), 'placeholder\n');
    copyFileSync(RULES_FILE, join(dir, 'locklens-rules.yml'));
    writeFileSync(join(dir, 'prometheus.yml'), uncommented.replaceAll('/etc/prometheus/', `${dir}/`));
    const config = parse(readFileSync(join(dir, 'prometheus.yml'), 'utf8')) as { scrape_configs: Record<string, unknown>[] };
    assert.equal(config.scrape_configs[0].scheme, 'https', 'the TLS settings were uncommented');
    await passes('promtool', ['check', 'config', join(dir, 'prometheus.yml')]);
  }));

test('the Alertmanager example passes amtool check-config', () => passes('amtool', ['check-config', join(PROMETHEUS_DEPLOY, 'alertmanager.example.yml')]));

test('the example config file is YAML with its connections named and no password in it', () => {
  const config = parse(readFileSync(join(repoRoot, 'deploy/locklens.example.yml'), 'utf8')) as { connections: { name: string }[] };
  assert.ok(config.connections.length > 0 && config.connections.every((c) => c.name), 'every connection has a name');
  assert.doesNotMatch(JSON.stringify(config), /"(password|keyPassphrase)"/);
});

/** The unit's `Key=value` settings by section (a key set twice keeps every value). */
function unitSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const line of text.split('\n')) {
    if (/^\s*(#|$)/.test(line)) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) section = header[1];
    else {
      const setting = /^(\w+)=(.*)$/.exec(line);
      assert.ok(setting && section, `not a setting in a section: ${line}`);
      const key = `${section}.${setting[1]}`;
      settings.set(key, [...(settings.get(key) ?? []), setting[2]]);
    }
  }
  return settings;
}

test('the systemd unit runs locklens serve hardened, with its state directory, and does not restart forever', () => {
  const unit = unitSettings(readFileSync(UNIT_FILE, 'utf8'));
  const expected: Record<string, string> = {
    'Service.ExecStart': '/usr/bin/locklens serve --config /etc/locklens/locklens.yml',
    'Service.DynamicUser': 'yes',
    'Service.StateDirectory': 'locklens',
    'Service.ProtectSystem': 'strict',
    'Service.NoNewPrivileges': 'yes',
    'Service.Restart': 'on-failure',
    'Service.RestartPreventExitStatus': '2',
    'Unit.StartLimitBurst': '5',
    'Install.WantedBy': 'multi-user.target',
  };
  for (const [key, value] of Object.entries(expected)) assert.deepEqual(unit.get(key), [value], key);
});

test('the systemd unit passes systemd-analyze verify', { skip: !existsOnPath('systemd-analyze') && 'no systemd-analyze here' }, () =>
  inTempDir(async (dir) => {
    // verify requires ExecStart's program to exist: a stand-in for /usr/bin/locklens, everything else as shipped.
    const stub = join(dir, 'locklens');
    writeFileSync(stub, '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(dir, 'locklens.service'), readFileSync(UNIT_FILE, 'utf8').replaceAll('/usr/bin/locklens', stub));
    const result = await runTool('systemd-analyze', ['verify', join(dir, 'locklens.service')]);
    // It only warns (exit 0) about an unknown or misspelt setting: any output is a failure.
    assert.equal(result.code, 0, show(result));
    assert.equal(result.stdout + result.stderr, '', show(result));
  }));

function existsOnPath(program: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, program)));
}
