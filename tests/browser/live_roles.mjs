// The live view by role, against a running stack and sluice-audit started
// by tests/integration/test_console.c with a viewer's and an auditor's
// console keys (SLUICE_VIEWER_KEY, SLUICE_AUDITOR_KEY):
//   1. over the API: a viewer's /api/live feed carries the blocked
//      run_shell call's name and verdict and none of its arguments, nor the
//      user's message, while the auditor's feed of the same call has them;
//   2. in headless Chromium: a viewer logs in, opens the live view and sees
//      the call's name and verdict pushed as it happens, not its arguments.
// Exits non-zero on the first failure.
import { join } from 'node:path';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;
const gatewayUrl = process.env.SLUICE_GATEWAY_URL;
const viewerKey = process.env.SLUICE_VIEWER_KEY;
const auditorKey = process.env.SLUICE_AUDITOR_KEY;
const waitMs = 20000;
const secrets = ['rm -rf', 'tidy up'];     // the call's arguments, the user's message

async function blockedRequest () {
  const body = {
    model: 'mock-tools', stream: true,
    messages: [{ role: 'user', content: 'Check the weather in Paris and tidy up my disk' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
            { type: 'function', function: { name: 'run_shell', parameters: { type: 'object' } } }]
  };
  const res = await fetch(gatewayUrl + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
  });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('sluice blocked a call to run_shell'))
    fail('the stack blocks run_shell (status ' + res.status + ')');
}

// A live feed read as it comes, for a console key.
function feed (key) {
  const abort = new AbortController();
  const f = { text: '', abort, done: null };
  f.done = fetch(new URL('/api/live', consoleUrl), { headers: { Authorization: 'Bearer ' + key }, signal: abort.signal })
    .then(async (res) => {
      f.status = res.status;
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        f.text += dec.decode(value, { stream: true });
      }
    }).catch(() => {});
  return f;
}

async function until (what, test) {
  const end = Date.now() + waitMs;
  while (!test()) {
    if (Date.now() > end) fail(typeof what === 'function' ? what() : what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The call events of a feed, parsed.
function calls (text) {
  return text.split('\n\n').filter((e) => e.startsWith('event: call\n'))
    .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
}

// 1. The API.
const viewer = feed(viewerKey), auditor = feed(auditorKey);
await until(() => 'both feeds open with their snapshot (' + viewer.status + ' ' + auditor.status + ': ' +
             viewer.text.slice(0, 200) + ' / ' + auditor.text.slice(0, 200) + ')', () => viewer.text.includes('event: snapshot') &&
                                                          auditor.text.includes('event: snapshot'));
await blockedRequest();
const blocked = (c) => c.tool === 'run_shell' && c.action === 'block';
await until('the viewer\'s feed has the blocked call', () => calls(viewer.text).some(blocked));
await until('the auditor\'s feed has the blocked call', () => calls(auditor.text).some(blocked));
await until('the auditor\'s feed has its arguments', () => auditor.text.includes('rm -rf'));
for (const s of secrets)
  if (viewer.text.includes(s)) fail('the viewer\'s feed carries "' + s + '": ' + viewer.text.slice(0, 2000));
const call = calls(viewer.text).find(blocked);
if (call.arguments !== null || call.redacted !== true || call.rule !== 'no-rm-rf')
  fail('the viewer\'s call: its rule, no arguments, marked redacted: ' + JSON.stringify(call));
viewer.abort.abort();
auditor.abort.abort();
console.log('ok: over the API, a viewer\'s feed has the call and its verdict, not its arguments');

// 2. The page.
await withPage(async (page, errors) => {
  await page.goto(consoleUrl + '#/live');
  await page.waitForSelector('form.login input[type="password"]', { timeout: 10000 });
  await page.fill('form.login input[type="password"]', viewerKey);
  await page.click('form.login button');
  await page.waitForSelector('#me[data-role="viewer"]', { timeout: 10000 });
  errors.length = 0;                  // the console's 401s before the login are no fault of the page
  await page.waitForSelector('#inflight .empty, #inflight .stream', { timeout: 10000 });
  const sel = '.stream .call[data-tool="run_shell"][data-action="block"]';
  const before = await page.locator(sel).count();
  await blockedRequest();
  await page.waitForFunction(([s, n]) => document.querySelectorAll(s).length > n, [sel, before],
                             { timeout: waitMs, polling: 'raf' });
  await page.screenshot({ path: join(shots, 'console-live-viewer.png') });
  const card = await page.locator(sel).first().innerText();
  if (!card.includes('run_shell') || !card.includes('no-rm-rf'))
    fail('the viewer sees the call\'s name and its rule: ' + card);
  if (!(await page.locator('#redacted-note').count())) fail('the page says what a viewer does not see');
  const all = await page.locator('main').innerText();
  for (const s of secrets)
    if (all.includes(s)) fail('the viewer\'s live page shows "' + s + '"');
  if (errors.length) fail('page errors: ' + errors.join('; '));
  console.log('ok: in the page, a viewer sees the call and its verdict live, not its arguments');
});
