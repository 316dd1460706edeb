// The console's Pending page in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core), against a running stack whose policy asks a
// person about run_shell, and sluice-audit started with --judge-approvals by
// tests/integration/test_console_pending.c:
//   1. a call the judge holds shows on the page soon after it began to wait
//      (measured from the approval's created_at, the judge's clock on this
//      machine; bound SLUICE_PENDING_DEADLINE_MS), with its tool, its
//      arguments and the rule;
//   2. with the keyboard only (c to write a comment, Esc, a to approve) it
//      is approved: the client's stream goes on and gets the call;
//   3. it moves to "Recently decided", naming the console as who decided.
// A screenshot of the page goes to SLUICE_SCREENSHOTS. Prints one JSON line
// of measurements ("measured: {...}"); exits non-zero on the first failure.
import { join } from 'node:path';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;
const gatewayUrl = process.env.SLUICE_GATEWAY_URL;
const deadline = Number(process.env.SLUICE_PENDING_DEADLINE_MS || 2000);
const measured = {};

function heldRequest () {
  const body = {
    model: 'mock-tools', stream: true,
    messages: [{ role: 'user', content: 'Check the weather in Paris and tidy up my disk' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
            { type: 'function', function: { name: 'run_shell', parameters: { type: 'object' } } }]
  };
  return fetch(gatewayUrl + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
  }).then(async (res) => ({ status: res.status, text: await res.text() }));
}

await withPage(async (page, errors) => {
  await page.goto(consoleUrl + '#/pending');
  await page.waitForSelector('#pending-list .empty', { timeout: 10000 });
  // 1. The held call shows, pushed.
  const sent = performance.now();
  const response = heldRequest();
  await page.waitForSelector('#pending-list .approval', { timeout: Math.max(deadline * 5, 10000) });
  const shownAt = Date.now();
  measured.pending_ms_from_request = Math.round(performance.now() - sent);
  const created = Number(await page.locator('#pending-list .approval').first().getAttribute('data-created'));
  measured.pending_ms_from_created = shownAt - created;
  if (!created || shownAt - created > deadline)
    fail('the pending call showed ' + (shownAt - created) + ' ms after it began to wait (bound ' + deadline + ' ms)');
  const card = page.locator('#pending-list .approval').first();
  const text = await card.innerText();
  if (!text.includes('run_shell') || !text.includes('rm -rf') || !text.includes('ask-shell'))
    fail('the card shows the tool, its arguments and the rule: ' + text);
  await page.screenshot({ path: join(shots, 'console-pending.png'), fullPage: false });
  // 2. Keyboard only: a comment, then approve.
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('j');
  await page.keyboard.press('c');
  await page.keyboard.type('fine from the browser');
  await page.keyboard.press('Escape');
  await page.keyboard.press('a');
  const answer = await response;
  if (answer.status !== 200 || !answer.text.includes('"name":"run_shell"'))
    fail('approved, the call reaches the client (status ' + answer.status + ')');
  // 3. Decided, by the console, with the comment.
  await page.waitForSelector('#decided-list tr', { timeout: 10000 });
  const row = await page.locator('#decided-list tr').first().innerText();
  if (!row.includes('approved') || !row.includes('console') || !row.includes('fine from the browser'))
    fail('the decision shows with who took it and the comment: ' + row);
  await page.waitForSelector('#pending-list .empty', { timeout: 10000 });
  await page.screenshot({ path: join(shots, 'console-pending-decided.png'), fullPage: false });
  if (errors.length) fail('page errors: ' + errors.join('; '));
  console.log('measured: ' + JSON.stringify(measured));
});
