import type { LockTreeProvider } from './lockTreeProvider';
import { LockNode, MemberNode } from './nodes';

/** The row of a lock in the Locks tree: its lock row, or (a single-key lock) its one member's row; under any prefix. */
export function lockRowOf(tree: LockTreeProvider, connection: string, lockId: string): LockNode | MemberNode | undefined {
  const top = tree.getChildren().find((n) => n.connection.name === connection);
  for (const prefix of top ? tree.getChildren(top) : []) {
    const node = tree.getChildren(prefix).find((n): n is LockNode | MemberNode => (n instanceof LockNode || n instanceof MemberNode) && n.lockId === lockId);
    if (node) return node;
  }
  return undefined;
}
