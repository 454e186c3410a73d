import { identityOf } from './holdObservation';
import { keyId } from './keys';
import { remainingTtl, type LeaseInfo } from './leaseInfo';
import { hasMajority, holderCount, isSemaphore, members, type ChangeSet, type LockMember, type LockState } from './lockState';

/** What can be wrong with one member of a lock. */
/** `noMajority`: a holder seen on too few of a redlock's independent instances to hold the lock in redlock's sense. */
export type MemberTrouble = 'leaseExpired' | 'stalled' | 'noMajority' | 'noLease' | 'longHold';

/**
 * What can be wrong with a lock as a whole, from the connection's diagnosis (src/core/diagnosis): `deadlock`, it is in
 * a confirmed cycle of owners each waiting for the next; `ttlFit`, its holds outrun a TTL nothing renews.
 */
export type LockTrouble = 'deadlock' | 'ttlFit';

export type Trouble = MemberTrouble | LockTrouble;

/** Worst first. */
export const TROUBLE_ORDER: readonly Trouble[] = ['deadlock', 'leaseExpired', 'stalled', 'noMajority', 'ttlFit', 'noLease', 'longHold'];

/** Since when something has been true, and whether LockLens saw it happen or only found it so when it started looking. */
export interface Since {
  readonly at: number;
  /** False when it was already so at the first read (or appeared during a disconnection): the real start is earlier. */
  readonly exact: boolean;
}

export type Role = 'holder' | 'waiter' | 'leader' | 'candidate' | 'single';

/** One member of a lock with everything a view shows about it. */
export interface MemberHealth {
  readonly member: LockMember;
  readonly role: Role;
  /** 0 for the holder; n for the n-th waiter. */
  readonly position: number;
  readonly lease?: LeaseInfo;
  /** Seconds left, counted down from the last sample; undefined without a lease or before its first sample. */
  readonly ttl?: number;
  /** Holding since (holder), or waiting since (waiter). */
  readonly since: Since;
  readonly troubles: readonly MemberTrouble[];
}

export interface HealthOptions {
  /** A holder holding longer than this is flagged. */
  readonly longHoldMs: number;
}

/**
 * Remembers when each key was first seen and when each lock's holder became the holder. etcd keeps no wall-clock
 * times (only revisions), so ages are what LockLens observed; anything found already in place is marked inexact ("≥").
 */
export class LockClock {
  private readonly firstSeen = new Map<string, Since>();
  private readonly holderSince = new Map<string, { holder: string; since: Since }>();
  /** A semaphore's holders, by key: each took a permit of its own, at its own time. */
  private readonly permitSince = new Map<string, Since>();
  private readonly keysOfLock = new Map<string, Set<string>>();

  /** Folds a change set in; call it for every change set, in order. */
  observe(changes: ChangeSet, now = Date.now()): void {
    const exact = !changes.resynced;
    for (const lock of changes.changed) {
      const current = new Set<string>();
      for (const m of members(lock)) {
        const kid = keyId(m.key);
        current.add(kid);
        if (!this.firstSeen.has(kid)) this.firstSeen.set(kid, { at: now, exact });
      }
      if (isSemaphore(lock)) {
        for (const m of members(lock).slice(0, holderCount(lock))) if (!this.permitSince.has(keyId(m.key))) this.permitSince.set(keyId(m.key), { at: now, exact });
      }
      // Who holds, not only which key: a Redis token lock's next holder sets the same key with a token of its own.
      const holder = lock.holder && identityOf(lock.holder);
      const known = this.holderSince.get(lock.id);
      if (!holder) this.holderSince.delete(lock.id);
      else if (known?.holder !== holder) {
        // Seen live (a waiter moving up, or a new key taking a free lock), the hold starts now; found by a (re)load, it
        // started at some unknown earlier time.
        this.holderSince.set(lock.id, { holder, since: { at: now, exact } });
      }
      this.forgetGone(lock, current);
    }
    for (const id of changes.removed) {
      this.holderSince.delete(id);
      this.forgetLock(id);
    }
  }

  /** When the key was first seen (for waiters: queued since). */
  seen(member: LockMember): Since {
    return this.firstSeen.get(keyId(member.key)) ?? { at: Date.now(), exact: false };
  }

  /** When a semaphore's holder took its permit. */
  permitHeldSince(member: LockMember): Since {
    return this.permitSince.get(keyId(member.key)) ?? this.seen(member);
  }

  /** When the lock's current holder became the holder. */
  heldSince(lock: LockState): Since | undefined {
    return this.holderSince.get(lock.id)?.since;
  }

  /** Since when `holder` holds the lock: a semaphore's holder since it took its permit, another lock's holder as heldSince. */
  holdingSince(lock: LockState, holder: LockMember): Since | undefined {
    return isSemaphore(lock) ? this.permitHeldSince(holder) : this.heldSince(lock);
  }

  private forgetGone(lock: LockState, current: Set<string>): void {
    for (const kid of this.keysOfLock.get(lock.id) ?? []) {
      if (!current.has(kid)) {
        this.firstSeen.delete(kid);
        this.permitSince.delete(kid);
      }
    }
    this.keysOfLock.set(lock.id, current);
  }

  private forgetLock(id: string): void {
    for (const kid of this.keysOfLock.get(id) ?? []) {
      this.firstSeen.delete(kid);
      this.permitSince.delete(kid);
    }
    this.keysOfLock.delete(id);
  }
}

/** Each member of a lock with its role, live TTL, age and troubles. */
export function lockHealth(
  lock: LockState,
  clock: LockClock,
  lease: (id: string) => LeaseInfo | undefined,
  options: HealthOptions,
  now = Date.now(),
): MemberHealth[] {
  const holders = holderCount(lock);
  // A semaphore's holders each took a permit of their own, each at its own time.
  const ownHolds = isSemaphore(lock);
  return members(lock).map((member, i) => {
    // Every holder of a read lock is at position 0; waiters count from 1.
    const position = i < holders ? 0 : i - holders + 1;
    const info = member.lease ? lease(member.lease) : undefined;
    const role = roleOf(lock, position);
    let since = clock.seen(member);
    if (i < holders && ownHolds) since = clock.permitHeldSince(member);
    else if (i === 0 && holders) since = clock.heldSince(lock) ?? since;
    const troubles: MemberTrouble[] = [];
    if (info?.state === 'expired') troubles.push('leaseExpired');
    else if (info?.stalled) troubles.push('stalled');
    if (position === 0 && !hasMajority(member)) troubles.push('noMajority');
    if (!member.lease) troubles.push('noLease');
    if (position === 0 && now - since.at > options.longHoldMs) troubles.push('longHold');
    return { member, role, position, lease: info, ttl: info && remainingTtl(info, now), since, troubles };
  });
}

function roleOf(lock: LockState, position: number): Role {
  switch (lock.kind) {
    case 'single':
      return 'single';
    case 'election':
      return position === 0 ? 'leader' : 'candidate';
    case 'queue':
    case 'readwrite':
    case 'semaphore':
      return position === 0 ? 'holder' : 'waiter';
  }
}

/** The worst trouble among members and the lock's own, for the lock's own decoration. */
export function worstTrouble(health: readonly MemberHealth[], lockTroubles: readonly LockTrouble[] = []): Trouble | undefined {
  const all = new Set<Trouble>([...lockTroubles, ...health.flatMap((h) => h.troubles)]);
  return TROUBLE_ORDER.find((t) => all.has(t));
}
