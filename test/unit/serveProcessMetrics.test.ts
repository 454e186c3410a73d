import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServeMetrics } from '../../src/cli/serve/metrics';

test("serve's process metrics: prom-client's, less the event-loop delay summaries a 10 ms timer would feed", async () => {
  const metrics = new ServeMetrics([], { maxLocks: 10, drop: [], rewrite: [] }, 'test');
  const families = new Set([...(await metrics.registry.metrics()).matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
  for (const kept of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds', 'nodejs_eventloop_lag_seconds', 'locklens_build_info']) {
    assert.ok(families.has(kept), `${kept} is exported`);
  }
  assert.deepEqual([...families].filter((f) => /^nodejs_eventloop_lag_\w+_seconds$/.test(f)), []);
});
