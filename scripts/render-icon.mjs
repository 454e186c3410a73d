// Renders media/icon.svg into media/icon.png (128×128, the marketplace icon; vsce does not accept SVG icons) with the
// Debian Chromium and playwright-core the UI tests already use, so nothing else is installed. Run it after editing
// the SVG: `node scripts/render-icon.mjs`; the PNG is committed.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const svg = readFileSync(`${root}media/icon.svg`, 'utf8');
const browser = await chromium.launch({
  executablePath: process.env.LOCKLENS_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 }, deviceScaleFactor: 1 });
  await page.setContent(`<!doctype html><style>html,body{margin:0;background:transparent}svg{display:block}</style>${svg}`);
  await page.screenshot({ path: `${root}media/icon.png`, omitBackground: true, clip: { x: 0, y: 0, width: 128, height: 128 } });
  console.log('media/icon.png written');
} finally {
  await browser.close();
}
