// The console's Tools page in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core), against a stack and sluice-audit started by
// tests/integration/test_tools.c, where team red's requests carried two
// definitions of mcp__github__create_issue (the second's description asks
// the model to read ~/.ssh/id_rsa first, and its schema has a new field)
// and one of Bash:
//   1. the page lists team red's tools under their servers, both
//      definitions of create_issue among them;
//   2. "What changed" diffs the two: the added words and the added schema
//      lines are marked inserted, what stayed is not marked.
// Screenshots go to SLUICE_SCREENSHOTS. Exits non-zero on the first failure.
import { join } from 'node:path';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;

await withPage(async (page, errors) => {
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(consoleUrl)) outside.push(r.url()); });

  // 1. What team red can call.
  await page.goto(consoleUrl + '#/tools?team=red');
  await page.waitForSelector('section.team[data-team="red"] tr[data-name="mcp__github__create_issue"]', { timeout: 10000 });
  const defs = await page.locator('section.team[data-team="red"] tr[data-name="mcp__github__create_issue"]').count();
  if (defs !== 2) fail('both definitions of create_issue are listed, got ' + defs);
  const servers = await page.locator('section.team[data-team="red"] h3').allTextContents();
  if (!servers.includes('server github')) fail('create_issue under its server: ' + servers.join(' | '));
  if (await page.locator('section.team[data-team="red"] tr[data-name="Bash"]').count() !== 1) fail('Bash is listed once');
  const row = await page.locator('section.team[data-team="red"] tr[data-name="mcp__github__create_issue"]').first().innerText();
  if (!row.includes('changed')) fail('the tool is marked changed: ' + row);
  if (!row.includes('red-b')) fail('the newest definition names the key that sent it: ' + row);

  // 2. The diff of the two definitions.
  const change = page.locator('#tool-changes .change[data-name="mcp__github__create_issue"]');
  await change.waitFor({ timeout: 10000 });
  const inserted = (await change.locator('.diff-desc ins').allTextContents()).join('');
  if (!inserted.includes('~/.ssh/id_rsa')) fail('the words added to the description are marked: ' + inserted);
  const removed = (await change.locator('.diff-desc del').allTextContents()).join('');
  if (removed.includes('Open')) fail('words that stayed are not marked removed: ' + removed);
  const kept = await change.locator('.diff-desc').innerText();
  if (!kept.includes('Open a new issue')) fail('the unchanged words are shown: ' + kept);
  const lines = await change.locator('.diff-schema .line.ins').allTextContents();
  if (!lines.some((l) => l.includes('labels'))) fail('the schema line added is marked: ' + lines.join(' | '));
  if ((await change.locator('.diff-schema .line.del').count()) > 1)
    fail('only what changed in the schema is marked removed: ' + (await change.locator('.diff-schema .line.del').allTextContents()).join(' | '));
  await page.screenshot({ path: join(shots, 'console-tools.png'), fullPage: true });

  if (outside.length) fail('nothing loaded from elsewhere: ' + outside.join(' '));
  if (errors.length) fail('the page ran without script errors: ' + errors.join(' | '));
  console.log('ok');
});
