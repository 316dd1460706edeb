// Signing in to the audit console with a real OpenID provider
// (tests/oidc/provider.mjs: oidc-provider, started here on 127.0.0.1) in
// headless Chromium, against a stack whose policy asks a person about
// run_shell, two clients' calls waiting (team eng's and team ops's keys),
// and sluice-audit started by tests/integration/test_console_oidc.c with
// SLUICE_OIDC_* and a console key:
//   1. a viewer (no groups claim) signs in through the provider's pages:
//      the console names them and their role, and neither the pages nor
//      the API give a call's arguments (a capture and a text search are
//      refused);
//   2. the sign-in's redirect back, replayed, opens nothing;
//   3. an auditor sees the arguments;
//   4. an approver of team eng sees and approves eng's call (its client
//      gets the call), and is refused ops's;
//   5. logging out ends the session: the old cookie opens nothing;
//   6. the provider down: the console's page says so, and the console key
//      still works.
// Exits non-zero on the first failure.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, shots, withPage } from './browser.mjs';

const consoleUrl = process.env.SLUICE_CONSOLE_URL;         // ends with /
const gatewayUrl = process.env.SLUICE_GATEWAY_URL;
const opPort = process.env.SLUICE_OIDC_PORT;
const consoleKey = process.env.SLUICE_TEST_CONSOLE_KEY;
const keys = { eng: process.env.SLUICE_TEST_ENG_KEY, ops: process.env.SLUICE_TEST_OPS_KEY };
const here = dirname(fileURLToPath(import.meta.url));
const STEP_MS = 15000;

function startProvider () {
  const op = spawn('node', [join(here, '..', 'oidc', 'provider.mjs')], {
    env: { ...process.env, OIDC_PORT: opPort, OIDC_REDIRECT_URI: consoleUrl + 'login/callback',
           OIDC_CLIENT_SECRET: process.env.SLUICE_OIDC_CLIENT_SECRET },
    stdio: ['ignore', 'pipe', 'inherit']
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the provider did not start')), STEP_MS);
    op.stdout.on('data', (d) => { if (String(d).includes('ready ')) { clearTimeout(timer); resolve(op); } });
    op.on('exit', () => reject(new Error('the provider exited')));
  });
}

function heldRequest (key) {
  const body = {
    model: 'mock-tools', stream: true,
    messages: [{ role: 'user', content: 'Check the weather in Paris and tidy up my disk' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
            { type: 'function', function: { name: 'run_shell', parameters: { type: 'object' } } }]
  };
  return fetch(gatewayUrl + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key },
    body: JSON.stringify(body)
  }).then(async (res) => ({ status: res.status, text: await res.text() }));
}

// GET or POST from the page (its cookie), as JSON with the status.
function ask (page, path, body) {
  return page.evaluate(async ([p, b]) => {
    const res = await fetch(p, b === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                         body: JSON.stringify(b) });
    return { status: res.status, text: await res.text() };
  }, [path, body]);
}

// Through the provider's own pages: its login form, then its consent.
async function signIn (page, user) {
  await page.goto(consoleUrl + 'login');
  await page.waitForSelector('input[name="login"]', { timeout: STEP_MS });
  await page.fill('input[name="login"]', user);
  await page.fill('input[name="password"]', 'any');
  await page.click('button[type="submit"]');
  for (let i = 0; i < 3 && !page.url().startsWith(consoleUrl); i++) {
    await page.waitForLoadState('load');
    if (page.url().startsWith(consoleUrl)) break;
    const button = page.locator('button[type="submit"]');
    if (await button.count()) await button.first().click();
  }
  try {
    await page.waitForSelector('#me', { timeout: STEP_MS });
  } catch (e) {
    const said = await page.locator('#login-error').innerText({ timeout: 1000 }).catch(() => '');
    const me = await ask(page, '/api/me').catch(() => ({}));
    fail('signed in as ' + user + ': at ' + page.url() + ' ' + said + ' ' + JSON.stringify(me));
  }
  return page.getAttribute('#me', 'data-role');
}

async function pendingOf (page, want) {
  const deadline = Date.now() + STEP_MS;
  for (;;) {
    const r = await ask(page, '/api/approvals?state=pending');
    const list = r.status === 200 ? JSON.parse(r.text).approvals : [];
    if (list.length >= want || Date.now() > deadline) return { r, list };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const op = await startProvider().catch((e) => fail(e.message));
const eng = heldRequest(keys.eng);
const ops = heldRequest(keys.ops);
try {
  // 1. A viewer: named, with no contents anywhere.
  await withPage(async (page) => {
    let callback = null;
    page.on('request', (r) => { if (r.url().startsWith(consoleUrl + 'login/callback')) callback = r.url(); });
    const role = await signIn(page, 'viewer');
    if (role !== 'viewer') fail('no groups claim signs in a viewer, not ' + role);
    const me = await page.innerText('#me');
    if (!me.includes('Viewer Example')) fail('the console names the person: ' + me);
    const { list } = await pendingOf(page, 2);
    if (list.length !== 2) fail('a viewer sees both waiting calls (' + list.length + ')');
    const approvals = await ask(page, '/api/approvals?state=pending');
    if (approvals.text.includes('rm -rf')) fail('a viewer is given a call\'s arguments: ' + approvals.text);
    const streams = JSON.parse((await ask(page, '/api/streams')).text).streams || [];
    for (const s of streams) {
      const one = await ask(page, '/api/streams/' + s.sid);
      if (one.text.includes('rm -rf') || one.text.includes('tidy up my disk'))
        fail('a viewer fetches contents through the API: ' + one.text.slice(0, 300));
      if ((await ask(page, '/api/capture/' + s.sid)).status !== 403) fail('a viewer may not take a capture');
    }
    if ((await ask(page, '/api/streams?q=rm')).status !== 403) fail('a viewer may not search the contents');
    await page.goto(consoleUrl + '#/pending');
    await page.waitForTimeout(500);
    if ((await page.content()).includes('rm -rf')) fail('the Pending page shows a viewer the arguments');
    await page.screenshot({ path: join(shots, 'console-oidc-viewer.png') });
    // 2. The redirect back, replayed.
    if (!callback) fail('the provider sent the browser back to /login/callback');
    await page.context().clearCookies();
    await page.goto(callback);
    await page.waitForSelector('#login-error', { timeout: STEP_MS });
    const said = await page.innerText('#login-error');
    if (!said.includes('state')) fail('a replayed sign-in is refused, saying why: ' + said);
    if ((await ask(page, '/api/meta')).status !== 401) fail('a replayed sign-in opens nothing');
  });
  // 3. An auditor sees the arguments.
  await withPage(async (page) => {
    if (await signIn(page, 'auditor') !== 'auditor') fail('sluice-auditor signs in an auditor');
    const approvals = await ask(page, '/api/approvals?state=pending');
    if (!approvals.text.includes('rm -rf')) fail('an auditor sees the arguments: ' + approvals.text.slice(0, 300));
    const decide = await ask(page, '/api/approvals/' + JSON.parse(approvals.text).approvals[0].id, { decision: 'approve' });
    if (decide.status !== 403) fail('an auditor may not decide (' + decide.status + ')');
  });
  // 4. An approver of team eng; 5. logout.
  await withPage(async (page) => {
    if (await signIn(page, 'approver') !== 'approver') fail('sluice-approver:eng signs in an approver');
    const { r, list } = await pendingOf(page, 1);
    if (list.length !== 1 || list[0].identity.team !== 'eng') fail('an approver of eng sees eng\'s call only: ' + r.text);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'sluice_console');
    if (!session) fail('a session cookie');
    // ops's call, by its id from the console key's list: refused.
    const all = await fetch(consoleUrl + 'api/approvals?state=pending', { headers: { Authorization: 'Bearer ' + consoleKey } })
      .then((res) => res.json());
    const opsCall = all.approvals.find((a) => a.identity.team === 'ops');
    if (!opsCall) fail('ops\'s call waits');
    const refused = await ask(page, '/api/approvals/' + opsCall.id, { decision: 'approve' });
    if (refused.status !== 403) fail('an approver of eng is refused ops\'s call: ' + refused.status + ' ' + refused.text);
    const approved = await ask(page, '/api/approvals/' + list[0].id, { decision: 'approve', comment: 'fine' });
    if (approved.status !== 200) fail('an approver of eng approves eng\'s call: ' + approved.status + ' ' + approved.text);
    if (!approved.text.includes('approver@example.com')) fail('the decision names the person: ' + approved.text);
    const client = await eng;
    if (client.status !== 200 || !client.text.includes('run_shell')) fail('eng\'s client gets its call');
    await page.click('#status button');
    await page.waitForTimeout(500);
    const old = await fetch(consoleUrl + 'api/meta', { headers: { Cookie: 'sluice_console=' + session.value } });
    if (old.status !== 401) fail('the old cookie is dead after logout (' + old.status + ')');
  });
  // 6. The provider down.
  op.kill('SIGTERM');
  await new Promise((resolve) => op.on('exit', resolve));
  await withPage(async (page) => {
    await page.goto(consoleUrl + 'login');
    await page.waitForSelector('#login-error', { timeout: STEP_MS });
    const said = await page.innerText('#login-error');
    if (!said.includes('cannot be reached')) fail('the console says the provider is down: ' + said);
    await page.screenshot({ path: join(shots, 'console-oidc-down.png') });
    const meta = await fetch(consoleUrl + 'api/meta', { headers: { Authorization: 'Bearer ' + consoleKey } });
    if (meta.status !== 200) fail('the console key still works with the provider down');
    // ops's call ends, denied by the console key.
    const all = await fetch(consoleUrl + 'api/approvals?state=pending', { headers: { Authorization: 'Bearer ' + consoleKey } })
      .then((res) => res.json());
    for (const a of all.approvals)
      await fetch(consoleUrl + 'api/approvals/' + a.id, {
        method: 'POST', headers: { Authorization: 'Bearer ' + consoleKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ decision: 'deny' })
      });
  });
  await ops;
} finally {
  if (op.exitCode === null) op.kill('SIGTERM');
}
