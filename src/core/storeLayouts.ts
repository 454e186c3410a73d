/**
 * The layouts an acquire can give a name that holds nothing. The clients that contend on such a name each use one
 * layout, and a key or node of another is misread by them (a Redisson client gets WRONGTYPE from a string; a kazoo
 * client does not see Curator's nodes and takes the lock beside them), so the layout is chosen (freeNameLayout.ts).
 */
export interface FreeNameLayouts<Convention extends string = string> {
  /** The first is listed first where nothing else decides the order. */
  readonly layouts: readonly FreeNameLayout<Convention>[];
  /** The id taken where nothing says otherwise: the one least likely to break the clients of another layout. */
  readonly defaultId: string;
  /** Why it is the default, in a sentence (the CLI's help, the QuickPick's description). */
  readonly why: () => string;
}

export interface FreeNameLayout<Convention extends string = string> {
  /** `--layout`'s value and `AcquireOptions.layout`. */
  readonly id: string;
  /** The layout and the clients that write it (library names, not translated): "Redisson RLock: Redisson, node-redisson". */
  readonly label: string;
  /** The conventions of the members a lock in this layout has: how a lock seen before, or a sibling, tells its layout. */
  readonly conventions: readonly Convention[];
  /** It is a read/write lock, taken only with a mode (`AcquireOptions.mode`). */
  readonly readWrite?: true;
}
