// Shared with the demo (which cannot import from test/): see demo/ports.ts.
export { freePort } from '../../demo/ports';
