import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OWN_END_MS, OwnEnds } from '../../src/core/ownEnds';

describe('OwnEnds (what LockLens itself ended)', () => {
  test('a mark names a lease or an owner on one connection, for OWN_END_MS; a failed request takes it back', () => {
    const own = new OwnEnds();
    own.begin('prod', '694d', 1000);
    const failed = own.begin('prod', 'tok-b', 1000);
    assert.equal(own.ended('prod', '694d', '', 1500), true, 'by its lease');
    assert.equal(own.ended('prod', '', '694d', 1500), true, 'by its owner');
    assert.equal(own.ended('other', '694d', '', 1500), false, 'another connection');
    assert.equal(own.ended('prod', '', '', 1500), false, 'a member without lease or owner is nobody');
    assert.equal(own.ended('prod', '694d', '', 1000 + OWN_END_MS + 1), false, 'too late');
    assert.equal(own.ended('prod', '', 'tok-b', 1500), true);
    failed();
    assert.equal(own.ended('prod', '', 'tok-b', 1500), false);
  });
});
