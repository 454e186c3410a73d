/**
 * How a hold ended (see HoldEnd in history.ts, which says what each means): a module of its own, with no Node types,
 * because the timeline's protocol and so its browser bundle need the list too.
 */
export const HOLD_ENDS = ['released', 'revokedOrExpired', 'expired'] as const;
export type HoldEnd = (typeof HOLD_ENDS)[number];
