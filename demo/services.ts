import { errorMessage } from '../src/core/errors';
import { sleep } from '../src/core/sleep';
import { Group, type GroupOptions } from './processes';

export interface ServicesOptions {
  readonly runId: string;
  /** Every log line, with the service it is about. */
  readonly log: (who: string, message: string) => void;
  /** Log every acquire and release, not only what matters (stuck holders, lost locks, errors). */
  readonly verbose: boolean;
}

/**
 * What the demo's workloads (etcd's and Redis's) share: services that run until the workload stops, restarted after a
 * crash, and the process groups they start, all ended by `stop`.
 */
export abstract class Services {
  protected readonly abort = new AbortController();
  private readonly tasks: Promise<void>[] = [];
  private readonly groups = new Set<Group>();

  constructor(private readonly servicesOptions: ServicesOptions) {}

  protected get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  /** Stops every service: waiters leave their queues, holders release, processes end. */
  async stop(): Promise<void> {
    this.abort.abort();
    // Processes: SIGTERM, SIGKILL after 2 s. In-process services release within a few round trips; a dead store would
    // make them wait for call deadlines, so they get 5 s.
    await Promise.all([...this.groups].map((g) => g.stop(2000)));
    await Promise.race([Promise.all(this.tasks), sleep(5000)]);
  }

  protected log(who: string, message: string, verbose = false): void {
    if (!verbose || this.servicesOptions.verbose) this.servicesOptions.log(who, message);
  }

  /** Runs a service until the workload stops; a crash is logged and the service restarted after a pause. */
  protected run(who: string, service: () => Promise<void>): void {
    const loop = async () => {
      while (!this.stopping) {
        try {
          await service();
        } catch (e) {
          if (this.stopping) break;
          this.log(who, `failed: ${errorMessage(e)}; restarting in 3 s`);
          await sleep(3000, this.abort.signal);
        }
      }
    };
    this.tasks.push(loop());
  }

  /** Runs a process group to its end (or the workload's), returning how it ended. */
  protected async runGroup(who: string, command: string, args: string[], options: GroupOptions): Promise<string> {
    if (this.stopping) return 'not started';
    const group = new Group(who, command, args, this.servicesOptions.runId, options);
    this.groups.add(group);
    try {
      await new Promise<void>((resolve, reject) => {
        group.proc.once('error', reject);
        group.proc.once('exit', () => resolve());
      });
      return group.proc.exitCode !== null ? `exit ${group.proc.exitCode}` : `${group.proc.signalCode}`;
    } finally {
      this.groups.delete(group);
      // The watchdog leads the group; whatever it started that is still there goes with it.
      if (group.alive) await group.stop(1000);
    }
  }
}
