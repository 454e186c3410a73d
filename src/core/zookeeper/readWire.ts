/**
 * getChildren and getData on node-zookeeper-client's session, encoded and decoded here. The library builds each
 * request and reply field by field (a zero-filled 8-byte Buffer per long, twice over, its records' specifications
 * matched with regular expressions, a retry loop per request): 18 KB of garbage per node in a 100,000-node listing,
 * where the collector then took most of the time. These requests go through the library's own queues (its xids, its
 * order, its failing of what is pending when the connection drops); only their bytes and their replies' are read here.
 */
import * as zookeeper from 'node-zookeeper-client';
import { keptBytes } from '../keptBytes';

/** The parts of a node's Stat LockLens reads. */
export interface NodeStat {
  readonly czxid: bigint;
  readonly mzxid: bigint;
  readonly version: number;
  readonly ephemeralOwner: bigint;
  readonly dataLength: number;
  readonly numChildren: number;
}

export type ReadReply = { data: Buffer; stat: NodeStat } | string[];

/** OpCode.getData and OpCode.getChildren2 of ZooKeeper's protocol. */
const GET_DATA = 4;
const GET_CHILDREN2 = 12;

/** A read as the library's connection manager queues a request: a header it numbers, a payload it roots, bytes. */
export class ReadRequest {
  readonly header: { readonly type: number; xid: number };
  readonly payload = { setChrootPath: (chroot: string) => void (this.chroot = chroot) };
  private chroot = '';

  constructor(
    readonly what: 'children' | 'data',
    readonly path: string,
    private readonly watch: boolean,
  ) {
    this.header = { type: what === 'data' ? GET_DATA : GET_CHILDREN2, xid: 0 };
  }

  /** The frame: length, RequestHeader (xid, type), then the path and the watch flag (GetDataRequest, GetChildren2Request). */
  toBuffer(): Buffer {
    // The library's chroot rule: the root is the chroot itself.
    const path = this.chroot ? (this.path === '/' ? this.chroot : this.chroot + this.path) : this.path;
    const pathBytes = Buffer.byteLength(path);
    const frame = Buffer.allocUnsafe(17 + pathBytes);
    frame.writeInt32BE(frame.length - 4, 0);
    frame.writeInt32BE(this.header.xid, 4);
    frame.writeInt32BE(this.header.type, 8);
    frame.writeInt32BE(pathBytes, 12);
    frame.write(path, 16);
    frame[16 + pathBytes] = this.watch ? 1 : 0;
    return frame;
  }
}

interface Pending {
  readonly request: unknown;
  readonly callback: (error: unknown, reply?: ReadReply) => void;
}

/** The library's connection manager, as far as reading replies to ReadRequests needs it. */
export interface ReplyReader {
  pendingQueue: Pending[];
  zxid: Buffer;
}

const REPLY_HEADER = 4 + 16; // the frame's length, then xid, zxid, err

/**
 * If `frame` answers the oldest pending request and that is a ReadRequest, takes it off the queue (as the library
 * does), calls it back with the reply decoded and says true; false leaves the frame to the library (its own requests,
 * watch events, pings).
 */
export function readReply(manager: ReplyReader, frame: Buffer): boolean {
  const pending = manager.pendingQueue[0];
  if (!(pending?.request instanceof ReadRequest) || frame.length < REPLY_HEADER || frame.readInt32BE(4) !== pending.request.header.xid) return false;
  manager.pendingQueue.shift();
  // The last zxid seen, which the library sends when it reconnects (it copies it then, so it can be written in place).
  frame.copy(manager.zxid, 0, 8, 16);
  const err = frame.readInt32BE(16);
  if (err !== 0) {
    pending.callback((zookeeper.Exception as unknown as { create(code: number): Error }).create(err));
    return true;
  }
  let reply: ReadReply;
  try {
    reply = pending.request.what === 'data' ? dataReply(frame) : childrenReply(frame);
  } catch (e) {
    pending.callback(e);
    return true;
  }
  pending.callback(null, reply);
  return true;
}

/**
 * GetDataResponse: the data, then the Stat. The data is copied where kept bytes go (see keptBytes): a slice would keep
 * the socket's whole chunk alive, a copy from Node's pool its slab.
 */
function dataReply(frame: Buffer): { data: Buffer; stat: NodeStat } {
  const length = frame.readInt32BE(REPLY_HEADER);
  const start = REPLY_HEADER + 4;
  const data = keptBytes(frame.subarray(start, start + Math.max(length, 0)));
  return { data, stat: statAt(frame, start + Math.max(length, 0)) };
}

/** GetChildren2Response: a vector of names (−1: none), then the Stat. */
function childrenReply(frame: Buffer): string[] {
  const count = frame.readInt32BE(REPLY_HEADER);
  const names: string[] = [];
  let offset = REPLY_HEADER + 4;
  for (let i = 0; i < count; i++) {
    const length = frame.readInt32BE(offset);
    names.push(frame.toString('utf8', offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  if (offset > frame.length) throw new RangeError('a children reply longer than its frame');
  return names;
}

/** Stat: czxid, mzxid, ctime, mtime (longs), version, cversion, aversion (ints), ephemeralOwner, dataLength, numChildren, pzxid. */
function statAt(frame: Buffer, offset: number): NodeStat {
  return {
    czxid: frame.readBigInt64BE(offset),
    mzxid: frame.readBigInt64BE(offset + 8),
    version: frame.readInt32BE(offset + 32),
    ephemeralOwner: frame.readBigInt64BE(offset + 44),
    dataLength: frame.readInt32BE(offset + 52),
    numChildren: frame.readInt32BE(offset + 56),
  };
}
