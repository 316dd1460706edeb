// What the console's browser scripts share: headless Chromium (Debian's
// /usr/bin/chromium, or SLUICE_CHROMIUM) through playwright-core, in a
// throw-away profile, and one way to fail.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const shots = process.env.SLUICE_SCREENSHOTS || 'build';

export function fail (what) {
  console.error('not ok: ' + what);
  process.exitCode = 1;
  throw new Error(what);
}

// Run fn(page, errors) in a fresh browser: errors collects the page's
// script errors. A failure sets the exit code; the browser always closes.
export async function withPage (fn) {
  const profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.SLUICE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await fn(page, errors);
  } catch (e) {
    if (!process.exitCode) { console.error('not ok: ' + e.message); process.exitCode = 1; }
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
