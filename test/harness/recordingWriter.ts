/**
 * A recorder writing as fast as it can, for the kill tests: `node recordingWriter.js DIR FIRST` records holds of the
 * lock `jobs` with keys kFIRST, kFIRST+1, … and, after each transaction that committed, prints `committed N` (every key
 * up to kN is in the file). It runs until it is killed.
 */
import { HistoryRecorder } from '../../src/core/recording/recorder';
import { eventsOf } from './recordedEvents';

async function main(dir: string, first: number): Promise<void> {
  const recorder = await HistoryRecorder.open(dir);
  process.stdout.write('ready\n');
  const jobs = eventsOf('prod', 'jobs');
  for (let i = first; ; ) {
    // A burst of events of two rows each, as a busy connection sends them.
    for (const end = i + 20; i < end; i++) {
      const owner = `worker-${i % 7}`;
      recorder.record(jobs.holdStarted(`k${i}`, Date.now(), { owner }), 'redis');
      recorder.record(jobs.holdEnded(`k${i}`, Date.now(), 'released', 1, { owner }), 'redis');
    }
    if (await recorder.flush()) process.stdout.write(`committed ${i - 1}\n`);
  }
}

void main(process.argv[2], Number(process.argv[3]));
