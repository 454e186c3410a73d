// `npm run screenshots`, last step: copies the README's screenshots, which test/ui/demo.test.ts takes from the demo
// into test-output/screenshots/readme-*.png, to docs/screenshots/ (committed; not in the .vsix). Fails if one is
// missing, so a README image is never silently stale.
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const names = ['tree', 'default-width-demo', 'timeline', 'acquire', 'revoke', 'redis-tree', 'force-release', 'zookeeper-tree', 'postgres-tree', 'postgres-force-release', 'history'];
const missing = names.filter((n) => !existsSync(`${root}test-output/screenshots/readme-${n}.png`));
if (missing.length) {
  console.error(`missing: ${missing.map((n) => `test-output/screenshots/readme-${n}.png`).join(', ')} (run test/ui/demo.test.ts first)`);
  process.exit(1);
}
mkdirSync(`${root}docs/screenshots`, { recursive: true });
for (const n of names) {
  copyFileSync(`${root}test-output/screenshots/readme-${n}.png`, `${root}docs/screenshots/${n}.png`);
  console.log(`docs/screenshots/${n}.png  ${Math.round(statSync(`${root}docs/screenshots/${n}.png`).size / 1024)} KB`);
}
