import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as zookeeper from 'node-zookeeper-client';
import { ReadRequest, readReply, type ReadReply } from '../../src/core/zookeeper/readWire';

/** A reply frame: length, xid, zxid, err, then `body`. */
function frame(xid: number, zxid: bigint, err: number, body: Buffer): Buffer {
  const head = Buffer.alloc(20);
  head.writeInt32BE(16 + body.length, 0);
  head.writeInt32BE(xid, 4);
  head.writeBigInt64BE(zxid, 8);
  head.writeInt32BE(err, 16);
  return Buffer.concat([head, body]);
}

function int(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function stat(czxid: bigint, mzxid: bigint, version: number, owner: bigint, dataLength: number, numChildren: number): Buffer {
  const b = Buffer.alloc(68);
  b.writeBigInt64BE(czxid, 0);
  b.writeBigInt64BE(mzxid, 8);
  b.writeInt32BE(version, 32);
  b.writeBigInt64BE(owner, 44);
  b.writeInt32BE(dataLength, 52);
  b.writeInt32BE(numChildren, 56);
  b.writeBigInt64BE(99n, 60);
  return b;
}

function pendingOn(request: ReadRequest) {
  const replies: { error: unknown; reply?: ReadReply }[] = [];
  const manager = { pendingQueue: [{ request, callback: (error: unknown, reply?: ReadReply) => replies.push({ error, reply }) }], zxid: Buffer.alloc(8) };
  return { manager, replies };
}

describe('ZooKeeper reads on the wire', () => {
  test('requests: getData and getChildren2 frames, the watch flag, the chroot as the library applies it', () => {
    const data = new ReadRequest('data', '/a/b', true);
    data.header.xid = 7;
    assert.deepEqual(data.toBuffer(), Buffer.concat([int(13 + 4), int(7), int(4), int(4), Buffer.from('/a/b'), Buffer.from([1])]));
    const root = new ReadRequest('children', '/', false);
    root.payload.setChrootPath('/app');
    root.header.xid = 8;
    assert.deepEqual(root.toBuffer(), Buffer.concat([int(13 + 4), int(8), int(12), int(4), Buffer.from('/app'), Buffer.from([0])]));
    const below = new ReadRequest('children', '/x', false);
    below.payload.setChrootPath('/app');
    assert.equal(below.toBuffer().subarray(16, 22).toString(), '/app/x');
  });

  test('replies: data and Stat, children, an error as the library would give it; the zxid seen is kept', () => {
    const data = new ReadRequest('data', '/a', false);
    data.header.xid = 1;
    const onData = pendingOn(data);
    assert.equal(readReply(onData.manager, frame(1, 0x500000002n, 0, Buffer.concat([int(3), Buffer.from('abc'), stat(5n, 6n, 2, -7n, 3, 0)]))), true);
    assert.deepEqual(onData.replies, [{ error: null, reply: { data: Buffer.from('abc'), stat: { czxid: 5n, mzxid: 6n, version: 2, ephemeralOwner: -7n, dataLength: 3, numChildren: 0 } } }]);
    assert.equal(onData.manager.pendingQueue.length, 0);
    assert.equal(onData.manager.zxid.readBigInt64BE(), 0x500000002n);

    const empty = new ReadRequest('data', '/e', false);
    const onEmpty = pendingOn(empty);
    readReply(onEmpty.manager, frame(0, 1n, 0, Buffer.concat([int(-1), stat(1n, 1n, 0, 0n, 0, 0)])));
    assert.deepEqual((onEmpty.replies[0].reply as { data: Buffer }).data, Buffer.alloc(0));

    const list = new ReadRequest('children', '/l', false);
    const onList = pendingOn(list);
    readReply(onList.manager, frame(0, 1n, 0, Buffer.concat([int(2), int(1), Buffer.from('x'), int(2), Buffer.from('ü'), stat(1n, 1n, 0, 0n, 0, 2)])));
    assert.deepEqual(onList.replies, [{ error: null, reply: ['x', 'ü'] }]);

    const gone = new ReadRequest('data', '/gone', false);
    const onGone = pendingOn(gone);
    readReply(onGone.manager, frame(0, 1n, zookeeper.Exception.NO_NODE, Buffer.alloc(0)));
    assert.ok(onGone.replies[0].error instanceof zookeeper.Exception);
    assert.equal((onGone.replies[0].error as zookeeper.Exception).getCode(), zookeeper.Exception.NO_NODE);

    const short = new ReadRequest('children', '/s', false);
    const onShort = pendingOn(short);
    readReply(onShort.manager, frame(0, 1n, 0, Buffer.concat([int(2), int(1), Buffer.from('x')])));
    assert.ok(onShort.replies[0].error instanceof RangeError);
  });

  test('frames that are not a reply to the oldest pending read are left to the library', () => {
    const read = new ReadRequest('data', '/a', false);
    read.header.xid = 4;
    const { manager, replies } = pendingOn(read);
    assert.equal(readReply(manager, frame(-1, 0n, 0, Buffer.alloc(0))), false, 'a watch event');
    assert.equal(readReply(manager, frame(-2, 0n, 0, Buffer.alloc(0))), false, 'a ping');
    assert.equal(readReply({ pendingQueue: [{ request: {}, callback: () => undefined }], zxid: Buffer.alloc(8) }, frame(4, 0n, 0, Buffer.alloc(0))), false, "the library's own request");
    assert.equal(readReply({ pendingQueue: [], zxid: Buffer.alloc(8) }, frame(4, 0n, 0, Buffer.alloc(0))), false, 'nothing pending');
    assert.deepEqual(replies, []);
    assert.equal(manager.pendingQueue.length, 1);
  });
});
