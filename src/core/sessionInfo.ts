/**
 * A lock member's database session (SessionInfo) in short forms any view may show: the store-neutral pieces of the
 * SQL stores' sentences, used alike by the tree, the CLI and those sentences.
 */
import type { SessionInfo } from './lockState';

/** A statement cut to `chars` characters (whole code points: never half an emoji), with … where it was cut. */
export function queryPreview(query: string, chars: number): string {
  const points = [...query];
  return points.length > chars ? `${points.slice(0, chars).join('')}…` : query;
}

/** `user@client`, or whichever of the two the reader may see. */
export function sessionWho(s: Pick<SessionInfo, 'user' | 'client'>): string | undefined {
  return s.user && s.client ? `${s.user}@${s.client}` : (s.user ?? s.client);
}
