// The console's usage views in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core), against a stack and sluice-audit started by
// tests/integration/test_usage.c, where team payments (user ada) and team
// search (user cy) each made one stream:
//   1. the Usage page draws its chart (inline SVG, one bar per team) and its
//      table (a row per team, the estimated tokens of search's stream, a
//      cost), and switches to users; below them this month projected per
//      team and key (payments flagged past its budget of a micro-dollar,
//      search without one), and the Alerts list (payments' 80% of its
//      month's budget, posted by the test);
//   2. History filters by team and groups the streams under their teams.
// Screenshots go to SLUICE_SCREENSHOTS. Exits non-zero on the first failure.
import { join } from 'node:path';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;

await withPage(async (page, errors) => {
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(consoleUrl)) outside.push(r.url()); });

  // 1. Usage per team: the chart and the table.
  await page.goto(consoleUrl + '#/usage?days=7&group=team&metric=tokens');
  await page.waitForSelector('#usage-table tbody tr[data-key="payments"]', { timeout: 10000 });
  const bars = await page.locator('#usage-chart svg.chart rect').count();
  if (bars < 2) fail('the chart has a bar for each team, got ' + bars);
  const titles = await page.locator('#usage-chart svg.chart rect title').allTextContents();
  if (!titles.some((t) => t.includes('payments')) || !titles.some((t) => t.includes('search')))
    fail('the bars say whose they are: ' + titles.join(' | '));
  const search = await page.locator('#usage-table tbody tr[data-key="search"]').innerText();
  const cells = search.split('\t').map((c) => c.trim());
  if (cells[1] !== '1') fail('search made one request: ' + search);
  if (!(Number(cells[4].replace(/,/g, '')) > 0)) fail('search\'s tokens were estimated: ' + search);
  if (!cells[5].startsWith('$')) fail('a cost in dollars: ' + search);
  const payments = await page.locator('#usage-table tbody tr[data-key="payments"]').innerText();
  if (payments.split('\t')[4].trim() !== '0') fail('payments\' usage was reported, not estimated: ' + payments);
  // This month, projected, and the alerts.
  await page.waitForSelector('#projection-teams tbody tr[data-key="payments"]', { timeout: 10000 });
  if (!await page.locator('#projection-teams tbody tr[data-key="payments"]').evaluate((r) => r.classList.contains('over')))
    fail('payments is flagged past its budget');
  const projected = (await page.locator('#projection-teams tbody tr[data-key="payments"]').innerText()).split('\t').map((c) => c.trim());
  if (!projected[3].startsWith('$') || !projected[5].startsWith('$')) fail('the projection beside the budget, in dollars: ' + projected.join(' | '));
  if (!projected[6].includes('over budget')) fail('said over budget: ' + projected.join(' | '));
  const searchRow = await page.locator('#projection-teams tbody tr[data-key="search"]').innerText();
  if (!searchRow.includes('none') || searchRow.includes('over budget')) fail('search has no budget: ' + searchRow);
  if (await page.locator('#projection-keys tbody tr').count() !== 2) fail('a row per key');
  const alertRows = await page.locator('#alerts-table tbody tr').allInnerTexts();
  if (alertRows.length !== 1 || !alertRows[0].includes('team:payments') || !alertRows[0].includes('80%') || !alertRows[0].includes('budget_usd'))
    fail('the alert is listed: ' + alertRows.join(' | '));
  await page.screenshot({ path: join(shots, 'console-usage.png'), fullPage: true });
  // Per user, and the cost as the chart's measure.
  await page.selectOption('select[name="group"]', 'user');
  await page.waitForSelector('#usage-table tbody tr[data-key="search / cy"]', { timeout: 10000 });
  await page.selectOption('select[name="metric"]', 'cost');
  await page.waitForFunction(() => document.querySelector('#usage-chart h2')?.textContent.startsWith('Cost'), null,
                             { timeout: 10000 });
  if (await page.locator('#usage-table tbody tr[data-key="payments / ada"]').count() !== 1)
    fail('a row for ada of payments');

  // 2. History: filtered by team, then grouped by team.
  await page.goto(consoleUrl + '#/history');
  await page.fill('#filters input[name="team"]', 'search');
  await page.click('#filters button[type="submit"]');
  await page.waitForSelector('#results tr[data-sid]', { timeout: 10000 });
  const teams = await page.locator('#results tr[data-sid]').evaluateAll((rows) => rows.map((r) => r.dataset.team));
  if (teams.length !== 1 || teams[0] !== 'search') fail('the team filter: ' + teams.join(','));
  await page.goto(consoleUrl + '#/history?group=team');
  await page.waitForSelector('#results tr.group[data-group="payments"]', { timeout: 10000 });
  const order = await page.locator('#results tr').evaluateAll((rows) =>
    rows.map((r) => r.classList.contains('group') ? 'group:' + r.dataset.group : 'row:' + r.dataset.team));
  for (let i = 0; i < order.length; i++) {
    if (!order[i].startsWith('row:')) continue;
    const head = order.slice(0, i).reverse().find((x) => x.startsWith('group:'));
    if (!head || head.slice(6) !== order[i].slice(4)) fail('each stream under its team: ' + order.join(' '));
  }
  if (order.filter((x) => x.startsWith('group:')).length !== 2) fail('two teams, two groups: ' + order.join(' '));
  await page.screenshot({ path: join(shots, 'console-history-by-team.png'), fullPage: true });

  if (outside.length) fail('nothing loaded from elsewhere: ' + outside.join(' '));
  if (errors.length) fail('the pages ran without script errors: ' + errors.join(' | '));
  console.log('ok');
});
