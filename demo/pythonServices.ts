import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../src/core/sleep';
import { Services, type ServicesOptions } from './services';

/** Debian's python3, with python3-redis and python3-kazoo (the `python3` on PATH may be another one, without them). */
export const PYTHON = '/usr/bin/python3';

export type ReportLevel = 'ready' | 'info' | 'debug' | 'error';
export type Report = (level: ReportLevel, message: string) => void;

export interface PythonServicesOptions extends ServicesOptions {
  /** The store's URL: every peer's second argument. */
  readonly url: string;
  /** The demo's temp dir: the peers' script is written there. */
  readonly root: string;
}

/**
 * Every peer's script begins so: SIGTERM (how the demo stops a group) and SIGINT end it through SystemExit, so that
 * its `finally` blocks close its sessions; `mode`, `url` and `args` come from `python3 SCRIPT MODE URL ARGS…`; `say`
 * prints one report line, `LEVEL message`.
 */
const PRELUDE = String.raw`
import signal, sys

def _stop(*_):
    raise SystemExit(0)
signal.signal(signal.SIGTERM, _stop)
signal.signal(signal.SIGINT, _stop)

mode, url, args = sys.argv[1], sys.argv[2], sys.argv[3:]

def say(level, message):
    print(level, message, flush=True)
`;

/** …and ends so: the mode's function (from the script's MODES) runs, and a failure is reported before exit 1. */
const EPILOGUE = String.raw`
try:
    MODES[mode](*args)
except SystemExit:
    raise
except Exception as e:
    say('error', '%s: %s' % (type(e).__name__, e))
    sys.exit(1)
`;

/**
 * A workload of real clients' processes (redis-py, kazoo): one Python script for all its peers, run by Debian's python3
 * as `python3 SCRIPT MODE URL ARGS…`, each peer in a process group of its own. `modes` is the script's body: it
 * defines `MODES`, the function of each mode. Each line a peer prints is `LEVEL message`: `ready` (what it set up is
 * in place), `info`, `debug` (shown only with --verbose) or `error`.
 */
export abstract class PythonServices extends Services {
  private readonly script: string;

  constructor(
    private readonly pythonOptions: PythonServicesOptions,
    scriptName: string,
    modes: string,
  ) {
    super(pythonOptions);
    this.script = join(pythonOptions.root, scriptName);
    writeFileSync(this.script, PRELUDE + modes + EPILOGUE);
  }

  /** A long-running peer; if it exits it is started again after 3 s. By default its ready and debug lines are verbose. */
  protected async peer(who: string, args: string[], onReport: Report = (level, message) => this.log(who, message, level === 'debug' || level === 'ready')): Promise<void> {
    const exit = await this.runPeer(who, args, onReport);
    if (!this.stopping) {
      this.log(who, `exited (${exit}); starting it again in 3 s`);
      await sleep(3000, this.abort.signal);
    }
  }

  /** Runs `python3 SCRIPT MODE URL ARGS…` to its end (or the workload's), passing on each report it prints. */
  protected runPeer(who: string, [mode, ...args]: string[], onReport: Report): Promise<string> {
    const onLine = (line: string) => {
      const m = /^(ready|info|debug|error) (.*)$/.exec(line);
      if (m) onReport(m[1] as ReportLevel, m[2]);
      else if (line.trim()) this.log(who, line, true);
    };
    return this.runGroup(who, PYTHON, ['-u', this.script, mode, this.pythonOptions.url, ...args], { onLine });
  }
}
