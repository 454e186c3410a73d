import type { LockTreeProvider } from './lockTreeProvider';
import { FolderNode, LockNode, MemberNode, PrefixNode, type LockTreeNode } from './nodes';

/** The row of a lock in the Locks tree: its lock row, or (a single-key lock) its one member's row; under any prefix or folder. */
export function lockRowOf(tree: LockTreeProvider, connection: string, lockId: string): LockNode | MemberNode | undefined {
  const top = tree.getChildren().find((n) => n.connection.name === connection);
  const search = (rows: LockTreeNode[]): LockNode | MemberNode | undefined => {
    for (const n of rows) {
      if ((n instanceof LockNode || n instanceof MemberNode) && n.lockId === lockId) return n;
      const inside = n instanceof PrefixNode || n instanceof FolderNode ? search(tree.getChildren(n)) : undefined;
      if (inside) return inside;
    }
    return undefined;
  };
  return top ? search(tree.getChildren(top)) : undefined;
}
