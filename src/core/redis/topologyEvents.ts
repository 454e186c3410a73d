/**
 * The connection events of each kind of Redis topology, as a watch needs them: the one instance's connection closing
 * and coming back; a redlock instance's going away or coming back (one of several: not the view going away); a
 * cluster's masters coming and going with failovers.
 */
import type Redis from 'ioredis';
import type { RedisNode, Topology } from './topology';

export interface TopologyHandlers {
  /** The one instance's connection closed. */
  readonly closed: () => void;
  /** The one instance's connection is ready again. */
  readonly ready: () => void;
  /** A redlock instance's connection closed. */
  readonly nodeClosed: (node: RedisNode) => void;
  /** A redlock instance's connection is ready again, or a cluster gained or lost a master. */
  readonly nodesChanged: () => void;
}

/** Follows `topology`'s connection events until the function it returns is called. */
export function followTopology(topology: Topology, on: TopologyHandlers): () => void {
  const listeners: [Redis, string, () => void][] = [];
  const listen = (client: Redis, event: string, listener: () => void) => {
    client.on(event, listener);
    listeners.push([client, event, listener]);
  };
  if (topology.kind === 'single') {
    listen(topology.router, 'close', on.closed);
    listen(topology.router, 'ready', on.ready);
  } else if (topology.kind === 'redlock') {
    for (const node of topology.nodes()) {
      listen(node.client, 'close', () => on.nodeClosed(node));
      listen(node.client, 'ready', on.nodesChanged);
    }
  } else {
    listen(topology.cluster as unknown as Redis, '+node', on.nodesChanged);
    listen(topology.cluster as unknown as Redis, '-node', on.nodesChanged);
  }
  return () => {
    for (const [client, event, listener] of listeners) client.off(event, listener);
  };
}
