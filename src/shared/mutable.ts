/** `T` with its fields writable: for an object a module builds or sums in place before it hands it out read-only. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };
