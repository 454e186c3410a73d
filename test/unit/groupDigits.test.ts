import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupDigits } from '../../src/shared/groupDigits';

test('groupDigits writes what toLocaleString("en-US") writes, for the integers LockLens prints', () => {
  for (const n of [0, 7, 999, 1000, 12_345, 100_000, 999_999, 1_000_000, 1_234_567_890, Number.MAX_SAFE_INTEGER, -1, -1234, -1_000_000]) {
    assert.equal(groupDigits(n), n.toLocaleString('en-US'), String(n));
  }
});
