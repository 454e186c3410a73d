/**
 * A lock as views show it, from the contender znodes under one parent: the holder is the lowest sequence (with the
 * readers beside it, for a read/write lock), the waiters follow in sequence order. Pure: the reading is elsewhere.
 */
import { keptText } from '../keptBytes';
import { keyId, leaseHex } from '../keys';
import type { LockMember, LockState } from '../lockState';
import { bySequence, holdersAtHead, joinPath, kindOf, parseContender, type ContenderName } from './conventions';

/** How much of a node's data a member carries (kazoo's identifier, Curator's client IP: a few bytes in practice). */
export const VALUE_PREVIEW_BYTES = 1024;

/** What a read of one contender znode gives (`getData`): its data and the parts of its Stat a member shows. */
export interface ContenderNode {
  readonly name: string;
  readonly data: Buffer;
  readonly dataLength: number;
  /** The session owning the ephemeral node, 0 for a persistent one (kazoo's `ephemeral=False`). */
  readonly ephemeralOwner: bigint;
  readonly czxid: bigint;
  readonly mzxid: bigint;
}

/**
 * A zxid as a number. A zxid is the leader epoch in the high 32 bits and a counter in the low 32: it stays below 2^53
 * (exact in a double) until epoch 2^21, about two million leader elections, which no real ensemble reaches. Beyond it
 * the token is withheld (null) rather than shown rounded: a fencing token must never compare equal when it is not.
 */
export function zxidNumber(zxid: bigint): number | null {
  return zxid <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(zxid) : null;
}

/** An 8-byte big-endian Stat field (czxid, ephemeralOwner…) as a bigint. */
export function longOf(bytes: Buffer): bigint {
  return bytes.readBigInt64BE(0);
}

/** The session id as ZooKeeper's tools print it (`0x…` without the 0x), '' for none. */
export function sessionHex(id: bigint): string {
  return id === 0n ? '' : leaseHex(BigInt.asUintN(64, id));
}

interface Placed extends ContenderName {
  readonly name: string;
  readonly node: ContenderNode;
}

/** The member a contender (or a semaphore's lease) node under `parent` is, in the layout `convention` names. */
export function contenderMember(parent: string, node: ContenderNode, convention: string, mode?: 'read' | 'write'): LockMember {
  const owner = sessionHex(node.ephemeralOwner);
  return {
    key: keptText(joinPath(parent, node.name)),
    convention,
    owner,
    // An ephemeral node goes with its session (no TTL that can be read, though). A persistent one ('') stays until
    // someone deletes it.
    expiresWith: owner ? 'session' : 'nothing',
    lease: owner,
    token: zxidNumber(node.czxid),
    holds: null,
    ...(mode ? { mode } : {}),
    revision: zxidNumber(node.mzxid) ?? undefined,
    valueNamesOwner: true,
    valuePreview: node.data.subarray(0, VALUE_PREVIEW_BYTES),
    valueSize: node.dataLength,
  };
}

/** The lock whose contenders are `nodes` (children of `parent` that are no contenders are ignored), or undefined. */
export function lockOfChildren(parent: string, nodes: Iterable<ContenderNode>): LockState | undefined {
  const placed: Placed[] = [];
  for (const node of nodes) {
    const name = parseContender(node.name);
    if (name) placed.push({ ...name, name: node.name, node });
  }
  if (placed.length === 0) return undefined;
  placed.sort(bySequence);
  const kind = kindOf(placed.map((p) => p.convention));
  const readWrite = kind === 'readwrite';
  const members = placed.map((p) => contenderMember(parent, p.node, p.convention, readWrite ? (p.read ? 'read' : 'write') : undefined));
  const holders = holdersAtHead(placed);
  const nameBytes = keptText(parent);
  return {
    id: keyId(nameBytes),
    name: nameBytes,
    kind,
    holder: members[0],
    ...(readWrite ? { sharedWith: members.slice(1, holders) } : {}),
    waiters: members.slice(holders),
  };
}
