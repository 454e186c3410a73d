import { resolve } from 'node:path';

/** The repo root, from out/bench/ where this compiles to. */
export const ROOT = resolve(__dirname, '../..');
export const CLI = resolve(ROOT, 'dist/locklens.js');
