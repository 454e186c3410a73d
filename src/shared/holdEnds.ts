/**
 * How a hold ended (see HoldEnd in src/core/history.ts, which says what each means): outside the core, with no Node
 * types, because the timeline's protocol and so its browser bundle need the list too.
 */
export const HOLD_ENDS = ['released', 'revokedOrExpired', 'expired'] as const;
export type HoldEnd = (typeof HOLD_ENDS)[number];
