// The audit console in headless Chromium (Debian's /usr/bin/chromium, driven
// by playwright-core), against a running stack and sluice-audit started by
// tests/integration/test_console.c:
//   1. the live page shows a blocked run_shell call soon after it happens
//      (measured; the bound, SLUICE_LIVE_DEADLINE_MS, is generous for the
//      sanitizer builds the test runs);
//   2. the history page finds that stream by its rule;
//   3. the stream's page shows the notice the client got and the reason;
//   4. the charts, policy and try-it pages draw (try-it runs the running
//      policy over the recorded stream and shows the block);
//   5. the backtest page, with a policy without the rule, counts that call
//      newly allowed, and its example opens the stream's page.
// Screenshots of each page go to SLUICE_SCREENSHOTS. Prints one JSON line
// of measurements ("measured: {...}"); exits non-zero on the first failure.
import { join } from 'node:path';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;
const gatewayUrl = process.env.SLUICE_GATEWAY_URL;
const deadline = Number(process.env.SLUICE_LIVE_DEADLINE_MS || 2000);
const measured = {};

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
  return performance.now();
}

await withPage(async (page, errors) => {
  // 1. Live: the blocked call appears, pushed, without reloading.
  await page.goto(consoleUrl + '#/live');
  await page.waitForSelector('#inflight .empty, #inflight .stream', { timeout: 10000 });
  const blockedCall = '.stream .call[data-tool="run_shell"][data-action="block"]';
  const before = await page.locator(blockedCall).count();
  const sent = performance.now();
  const answered = await blockedRequest();
  await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length > n, [blockedCall, before],
                             { timeout: Math.max(deadline * 5, 10000), polling: 'raf' });
  const shown = performance.now();
  measured.live_ms_from_request = Math.round(shown - sent);
  measured.live_ms_from_response = Math.round(shown - answered);
  await page.screenshot({ path: join(shots, 'console-live.png'), fullPage: false });
  if (shown - answered > deadline)
    fail('the live page showed the blocked call ' + Math.round(shown - answered) + ' ms after the client got its notice (bound ' + deadline + ' ms)');
  const card = page.locator(blockedCall).first();
  const cardText = await card.innerText();
  if (!cardText.includes('no-rm-rf') || !cardText.includes('rm -rf /'))
    fail('the live call shows its rule and arguments: ' + cardText);

  // 2. History: found by its rule.
  await page.goto(consoleUrl + '#/history');
  await page.fill('#filters input[name="rule"]', 'no-rm-rf');
  await page.click('#filters button[type="submit"]');
  await page.waitForSelector('#results tr[data-sid]', { timeout: 10000 });
  measured.found_by_rule = await page.locator('#results tr[data-sid]').count();
  await page.screenshot({ path: join(shots, 'console-history.png') });

  // 3. The stream: the notice and the reason, the verdict beside its call.
  await page.locator('#results tr[data-sid]').first().click();
  await page.waitForSelector('.verdict.block[data-tool="run_shell"]', { timeout: 10000 });
  const verdict = await page.locator('.verdict.block[data-tool="run_shell"]').innerText();
  if (!verdict.includes('no-rm-rf')) fail('the verdict names its rule: ' + verdict);
  const reason = await page.locator('.verdict.block[data-tool="run_shell"] .reason').innerText();
  if (!reason.trim()) fail('the verdict shows the reason');
  const notice = await page.locator('.timeline .notice').innerText();
  if (!notice.includes('sluice blocked a call to run_shell')) fail('the notice the client got: ' + notice);
  await page.screenshot({ path: join(shots, 'console-stream.png'), fullPage: true });
  const sid = (await page.locator('h1 .mono').innerText()).trim();

  // 4. Charts, policy, try it.
  await page.goto(consoleUrl + '#/charts?range=3600000');
  await page.waitForSelector('svg.chart rect', { timeout: 10000 });
  await page.screenshot({ path: join(shots, 'console-charts.png'), fullPage: true });
  await page.goto(consoleUrl + '#/policy');
  await page.waitForFunction(() => document.querySelector('main pre') || document.querySelector('main .empty'), null, { timeout: 10000 });
  for (let i = 0; i < 40 && !(await page.locator('main pre').count()); i++) {
    await page.waitForTimeout(250);
    await page.goto(consoleUrl + '#/policy?again=' + i);
  }
  if (!(await page.locator('main pre').first().innerText()).includes('no-rm-rf')) fail('the policy page shows the judge\'s rules');
  await page.screenshot({ path: join(shots, 'console-policy.png'), fullPage: true });
  await page.goto(consoleUrl + '#/try?sid=' + sid);
  await page.waitForFunction(() => document.querySelector('textarea[name="capture"]').value.length > 0, null, { timeout: 10000 });
  await page.waitForFunction(() => document.querySelector('textarea[name="policy"]').value.includes('no-rm-rf'), null, { timeout: 10000 });
  await page.click('text=Run the policy');
  await page.waitForSelector('#try-result .call[data-tool="run_shell"][data-action="block"]', { timeout: 10000 });
  const client = await page.locator('#try-result pre.client').innerText();
  if (!client.includes('sluice blocked a call to run_shell')) fail('try-it shows what the client would receive');
  await page.screenshot({ path: join(shots, 'console-try.png'), fullPage: true });

  // 5. Backtest: a policy without the rule over the last day allows the
  // recorded block again; its example links to the stream's page.
  await page.goto(consoleUrl + '#/backtest?since=1d');
  await page.fill('textarea[name="policy"]', 'rules: []\n');
  await page.click('#backtest-run');
  await page.waitForSelector('#backtest-examples tr[data-kind="newly_allowed"]', { timeout: 10000 });
  const allowed = await page.locator('#backtest-totals [data-kind="newly_allowed"]').innerText();
  if (!/newly allowed [1-9]/.test(allowed)) fail('the backtest counts the block as newly allowed: ' + allowed);
  if (!(await page.locator('table[data-table="By tool"] tr[data-key="run_shell"]').count()))
    fail('the backtest\'s table by tool names run_shell');
  await page.screenshot({ path: join(shots, 'console-backtest.png'), fullPage: true });
  const example = page.locator('#backtest-examples tr[data-kind="newly_allowed"] a.sid[href="#/stream/' + sid + '"]');
  if (!(await example.count())) fail('an example links to the blocked stream ' + sid);
  await example.first().click();
  await page.waitForSelector('.verdict.block[data-tool="run_shell"]', { timeout: 10000 });
  if ((await page.locator('h1 .mono').innerText()).trim() !== sid) fail('the example opens its stream\'s page');

  if (errors.length) fail('the pages ran without script errors: ' + errors.join(' | '));
  console.log('measured: ' + JSON.stringify(measured));
  console.log('ok');
});
