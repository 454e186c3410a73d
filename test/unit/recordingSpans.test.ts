import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isLockLensError } from '../../src/core/errors';
import { parseAge, parseBytes, parseSince } from '../../src/core/recording/spans';

test('ages: units from ms to weeks, combined; anything else refused naming the setting', () => {
  assert.equal(parseAge('90s', 'x'), 90_000);
  assert.equal(parseAge('6h', 'x'), 6 * 3600_000);
  assert.equal(parseAge('30d', 'x'), 30 * 86_400_000);
  assert.equal(parseAge('1h30m', 'x'), 5400_000);
  assert.equal(parseAge('250ms', 'x'), 250);
  for (const bad of ['', '6', 'h', '6 hours', '-1h', '1h and']) {
    assert.throws(() => parseAge(bad, 'history.maxAge'), (e) => isLockLensError(e, 'INVALID_ARGUMENT') && e.message.startsWith(`history.maxAge: '${bad}' is not an age`), bad);
  }
});

test('sizes: SI and binary units, any case, bare bytes', () => {
  assert.equal(parseBytes('1GiB', 'x'), 1024 ** 3);
  assert.equal(parseBytes('500MB', 'x'), 500e6);
  assert.equal(parseBytes('200 mib', 'x'), 200 * 1024 ** 2);
  assert.equal(parseBytes('4096', 'x'), 4096);
  assert.throws(() => parseBytes('1 GB of disk', 'history.maxBytes'), /^LockLensError: history.maxBytes: '1 GB of disk' is not a size/);
});

test('--since: an age back from now, or an ISO 8601 time', () => {
  const now = Date.UTC(2025, 5, 1, 12);
  assert.equal(parseSince('6h', now), Date.UTC(2025, 5, 1, 6));
  assert.equal(parseSince('2025-06-01T08:00:00Z', now), Date.UTC(2025, 5, 1, 8));
  assert.throws(() => parseSince('2025-13-45', now), /--since: '2025-13-45' is not a date and time/);
  assert.throws(() => parseSince('yesterday', now), /--since: 'yesterday' is not an age/);
});
