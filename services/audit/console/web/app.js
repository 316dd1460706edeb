/*  The sluice audit console: a page per hash (#/live, #/pending, #/history,
    #/stream/<sid>, #/charts, #/usage, #/policy, #/tools, #/try, #/backtest, #/keys in keys.js), drawn from sluice-audit's JSON API. Plain
    JavaScript shipped with the binary: no framework, no build step, nothing
    loaded from elsewhere. Text from the store is always set as text (never
    parsed as HTML). */
'use strict';

const $main = document.getElementById('main');
const $status = document.getElementById('status');
let live = null;                        // the live or pending page's EventSource, while it is shown
let pendingKeys = null;                 // the pending page's keyboard handler, while it is shown
let pendingTimer = null;                // its clock (time left)

// --------------------------------------------------------------------------
// Small helpers

function el(tag, attrs, ...children) {
  const node = tag === 'svg' || attrs && attrs.svg ? document.createElementNS('http://www.w3.org/2000/svg', tag)
                                                   : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'svg' || v === undefined || v === null || v === false) continue;
    if (k === 'class') node.setAttribute('class', v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('data-')) node.setAttribute(k, v);
    else if (k in node && !(node instanceof SVGElement)) node[k] = v;
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}
const svg = (tag, attrs, ...children) => el(tag, Object.assign({ svg: true }, attrs), ...children);

function time(ms, withDate) {
  if (ms === null || ms === undefined) return '';
  const d = new Date(ms);
  const t = d.toLocaleTimeString([], { hour12: false });
  return withDate || Date.now() - ms > 20 * 3600e3 ? d.toLocaleDateString() + ' ' + t : t;
}
function duration(ms) {
  if (ms === null || ms === undefined) return '';
  return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
}
function micros(us) {
  if (us === null || us === undefined) return '';
  return us < 1000 ? us + ' µs' : us < 1e6 ? (us / 1000).toFixed(1) + ' ms' : (us / 1e6).toFixed(2) + ' s';
}
function pretty(text) {
  if (!text) return '';
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}
function dollars(micro) {
  if (micro === null || micro === undefined) return '';
  const usd = micro / 1e6;
  return '$' + (usd >= 100 ? usd.toFixed(0) : usd >= 1 ? usd.toFixed(2) : usd.toFixed(4));
}
function count(n) { return n === null || n === undefined ? '' : Number(n).toLocaleString('en-US'); }
function who(team, user) { return (team || '') + (user ? ' / ' + user : ''); }
function badge(action) { return el('span', { class: 'badge ' + action, text: action }); }
function shortSid(sid) { return sid ? sid.slice(0, 8) : ''; }
function clear() { $main.replaceChildren(); }

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: 'same-origin' }, options || {}));
  if (res.status === 401) {
    const why = await res.json().catch(() => ({}));
    showLogin(undefined, why.sign_in);
    throw new Error('login needed');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// --------------------------------------------------------------------------
// Header: the store and the emitters

async function refreshStatus() {
  try {
    const m = await api('/api/meta');
    const parts = [m.store + (m.store_ok ? '' : ' (down)'), m.emitters_sending + '/' + m.emitters + ' emitters sending',
                   m.live_streams + ' in flight'];
    const me = m.role ? await api('/api/me') : null;
    const signedIn = m.keys || m.sign_in;
    // replaceChildren writes a null as the text "null": only what is there.
    const children = [el('span', { class: m.store_ok ? '' : 'bad', text: parts.join(' · ') })];
    if (me)
      children.push(el('span', { id: 'me', 'data-role': me.role,
                                 text: ' · ' + (me.name || me.email || me.sub) + ' (' + me.role + ')' }));
    if (signedIn)
      children.push(' ', el('button', { text: 'Log out', onclick: logout }));
    $status.replaceChildren(...children);
  } catch (e) { /* shown by the page */ }
}

// The session ends on the server: its cookie opens nothing after.
// Signed in with a provider, the provider's own session ends there too.
async function logout() {
  const res = await fetch('/api/logout', { method: 'POST', credentials: 'same-origin',
                                           headers: { 'Content-Type': 'application/json' }, body: '{}' }).catch(() => null);
  const body = res ? await res.json().catch(() => ({})) : {};
  if (body.end_session && /^https?:\/\//.test(body.end_session)) { location.href = body.end_session; return; }
  showLogin('Logged out.');
}

// Why a sign-in with the provider failed: the console sends the browser
// back with it (signin_error), once.
const signinError = new URLSearchParams(location.search).get('signin_error');
if (signinError) history.replaceState(null, '', location.pathname + location.hash);

function showLogin(message, signIn) {
  if (live) { live.close(); live = null; }
  clear();
  const input = el('input', { type: 'password', placeholder: 'console key', autocomplete: 'current-password' });
  const note = el('p', { class: 'error', id: 'login-error', text: message || (signinError ? 'Sign-in failed: ' + signinError : '') });
  const form = el('form', { class: 'panel login', onsubmit: async (e) => {
      e.preventDefault();
      const res = await fetch('/api/login', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                              body: JSON.stringify({ key: input.value }) });
      if (res.ok) route(); else note.textContent = 'That is not a console key.';
    } },
    el('h1', { text: 'sluice audit' }),
    signIn ? el('p', {}, el('a', { class: 'button', id: 'sign-in', href: '/login', text: 'Sign in with your provider' })) : null,
    el('p', { class: 'muted', text: signIn ? 'Or a console key:' : 'This console needs a console key.' }),
    input, ' ', el('button', { text: 'Log in' }), note);
  $main.append(form);
  input.focus();
}

// --------------------------------------------------------------------------
// Live: streams in flight and finishing, pushed as they are recorded

function callRow(c) {
  return el('div', { class: 'call', 'data-tool': c.tool || '', 'data-action': c.action, 'data-rule': c.rule || '' },
    el('span', { class: 'tool', text: c.tool || '?' }), badge(c.action),
    el('span', { class: 'why' },
      c.rule ? el('span', { class: 'tag', text: 'rule ' + c.rule }) : el('span', { class: 'tag', text: c.check }),
      c.reason || '', c.latency_us !== undefined ? el('span', { class: 'muted small', text: '  ' + micros(c.latency_us) }) : null),
    c.arguments ? el('pre', { class: 'args', text: pretty(c.arguments) }) : null);
}

function streamCard(s, fresh) {
  const start = s.start || {};
  const card = el('div', { class: 'stream' + (fresh ? ' new' : ''), 'data-sid': s.sid });
  const state = s.error ? el('span', { class: 'badge err', text: s.error.code || 'error' })
              : s.end ? el('span', { class: 'muted small', text: 'finished in ' + duration(s.end.duration_ms) +
                                                               (s.finish && s.finish.finish ? ' · ' + s.finish.finish : '') })
              : el('span', { class: 'badge live', text: 'in flight' });
  card.append(el('div', { class: 'head' },
    el('a', { class: 'sid', href: '#/stream/' + s.sid, text: shortSid(s.sid) }),
    el('span', { class: 'muted small', text: time(s.started_at) }),
    el('strong', { text: start.model || '' }),
    start.provider ? el('span', { class: 'tag', title: 'provider', text: 'via ' + start.provider }) : null,
    start.client ? el('span', { class: 'tag', title: 'client dialect', text: start.client + ' client' }) : null,
    start.client_key ? el('span', { class: 'tag', text: 'key ' + start.client_key }) : null,
    start.team ? el('span', { class: 'tag', title: 'team / user', text: who(start.team, start.user) }) : null,
    state));
  if (start.last_user) card.append(el('div', { class: 'user', text: '“' + start.last_user + '”' }));
  const calls = el('div', { class: 'calls' });
  for (const c of s.calls || []) calls.append(callRow(c));
  card.append(calls);
  return card;
}

function viewLive() {
  clear();
  const inflight = el('div', { id: 'inflight' });
  const finished = el('div', { id: 'finished' });
  $main.append(el('h1', { text: 'Live' }),
    el('p', { class: 'muted', text: 'Every stream as the store records it: its request, each tool call with its verdict, how it ended.' }),
    el('div', { class: 'live-grid' },
      el('section', {}, el('h2', { text: 'In flight' }), inflight),
      el('section', {}, el('h2', { text: 'Finished' }), finished)));
  const streams = new Map();         // sid -> state (as the snapshot gives it)
  const empty = (box, text) => { if (!box.children.length) box.append(el('div', { class: 'empty', text })); };
  const draw = (sid, fresh) => {
    const s = streams.get(sid);
    const old = document.querySelector('.stream[data-sid="' + sid + '"]');
    const card = streamCard(s, fresh);
    const box = s.end ? finished : inflight;
    if (old && old.parentNode === box) old.replaceWith(card);
    else {
      if (old) old.remove();
      box.querySelectorAll('.empty').forEach((n) => n.remove());
      box.prepend(card);
      while (finished.children.length > 50) finished.lastChild.remove();
    }
    empty(inflight, 'Nothing in flight.');
    empty(finished, 'Nothing finished yet.');
  };
  const touch = (sid) => {
    if (!streams.has(sid)) streams.set(sid, { sid, started_at: Date.now(), calls: [] });
    return streams.get(sid);
  };
  if (live) live.close();
  live = new EventSource('/api/live');
  live.addEventListener('snapshot', (e) => {
    const snap = JSON.parse(e.data);
    // A viewer's feed comes without contents, redacted by the console.
    if (snap.redacted && !document.getElementById('redacted-note'))
      $main.querySelector('h1').after(el('p', { class: 'muted', id: 'redacted-note',
        text: 'Your role sees streams, tool calls and verdicts; messages, thinking, arguments and results are hidden.' }));
    streams.clear();
    inflight.replaceChildren();
    finished.replaceChildren();
    for (const s of snap.recent.slice().reverse()) { streams.set(s.sid, s); draw(s.sid, false); }
    for (const s of snap.streams) { streams.set(s.sid, s); draw(s.sid, false); }
    empty(inflight, 'Nothing in flight.');
    empty(finished, 'Nothing finished yet.');
  });
  live.addEventListener('start', (e) => { const d = JSON.parse(e.data); const s = touch(d.sid); s.start = d; s.started_at = d.at; draw(d.sid, true); });
  live.addEventListener('call', (e) => { const d = JSON.parse(e.data); touch(d.sid).calls.push(d); draw(d.sid, true); });
  live.addEventListener('finish', (e) => { const d = JSON.parse(e.data); touch(d.sid).finish = d; draw(d.sid, false); });
  live.addEventListener('error', (e) => {
    if (!e.data) return;             // the connection's own error event: it reconnects by itself
    const d = JSON.parse(e.data); touch(d.sid).error = d; draw(d.sid, true);
  });
  live.addEventListener('end', (e) => { const d = JSON.parse(e.data); touch(d.sid).end = d; draw(d.sid, false); refreshStatus(); });
  live.addEventListener('gap', (e) => {
    const d = JSON.parse(e.data);
    $main.querySelector('h1').after(el('p', { class: 'error', text: time(d.at) + ': emitter ' + d.emitter + ' could not keep ' +
                                               d.lost + ' records (its spool was full); ' + d.streams + ' streams are incomplete.' }));
  });
}

// --------------------------------------------------------------------------
// History: search

const filterFields = [
  ['from', 'From', 'datetime-local'], ['to', 'To', 'datetime-local'], ['tool', 'Tool'], ['rule', 'Rule'],
  ['action', 'Action', ['', 'allow', 'block', 'drop', 'rewrite', 'terminate']],
  ['check', 'Check', ['', 'ran', 'default', 'timeout', 'error']],
  ['model', 'Model'], ['provider', 'Provider'], ['key', 'Client key'], ['team', 'Team'], ['user', 'User'],
  ['q', 'Text in arguments or messages'],
  ['state', 'State', ['', 'blocked', 'error', 'live', 'ended', 'lost']],
  ['group', 'Group by', ['', 'team', 'user']]];     // the page's, not the store's: rows under a heading each

function toLocalInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

function viewHistory(params) {
  clear();
  const form = el('form', { class: 'panel filters', id: 'filters' });
  for (const [name, label, kind] of filterFields) {
    let input;
    if (Array.isArray(kind)) input = el('select', { name }, kind.map((v) => el('option', { value: v, text: v || 'any' })));
    else input = el('input', { name, type: kind || 'search' });
    const value = params.get(name);
    if (value) input.value = kind === 'datetime-local' ? toLocalInput(Number(value)) : value;
    form.append(el('label', {}, label, input));
  }
  form.append(el('label', {}, '\u00a0', el('button', { type: 'submit', text: 'Search' })));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [name, , kind] of filterFields) {
      const v = form.elements[name].value;
      if (!v) continue;
      q.set(name, kind === 'datetime-local' ? String(new Date(v).getTime()) : v);
    }
    location.hash = '#/history?' + q.toString();
  });
  const table = el('tbody', { id: 'results' });
  const more = el('button', { class: 'ghost', text: 'Older…', hidden: true });
  $main.append(el('h1', { text: 'History' }), form,
    el('div', { class: 'panel' }, el('table', {},
      el('thead', {}, el('tr', {}, ['Started', 'Stream', 'Model', 'Provider', 'Client', 'Key', 'Team / user', 'Calls', 'Outcome', 'Duration', 'Last user message']
        .map((h) => el('th', { text: h })))), table), el('div', { class: 'row' }, more)));
  let before = 0;
  // Grouped by team (or team and user): each group's rows follow its heading,
  // newest first within it; older pages add to the groups already shown.
  const group = params.get('group') || '';
  const groups = new Map();          // key -> { head, last, n, cost }
  const place = (s, row) => {
    if (!group) { table.append(row); return; }
    const key = group === 'user' ? who(s.team || '(no team)', s.user || '(no user)') : s.team || '(no team)';
    let g = groups.get(key);
    if (!g) {
      g = { head: el('tr', { class: 'group', 'data-group': key }), last: null, n: 0, cost: 0 };
      table.append(g.head);
      g.last = g.head;
      groups.set(key, g);
    }
    g.last.after(row);
    g.last = row;
    g.n++;
    g.cost += s.cost_usd_micro || 0;
    g.head.replaceChildren(el('td', { colSpan: 11 }, el('strong', { text: key }),
      el('span', { class: 'muted small', text: '  ' + g.n + ' stream' + (g.n === 1 ? '' : 's') + (g.cost ? ' · ' + dollars(g.cost) : '') })));
  };
  const load = async () => {
    const q = new URLSearchParams(params);
    if (before) q.set('before', String(before));
    q.set('limit', '50');
    let data;
    q.delete('group');
    try { data = await api('/api/streams?' + q.toString()); } catch (e) { table.append(el('tr', {}, el('td', { colSpan: 11, class: 'error', text: e.message }))); return; }
    for (const s of data.streams) {
      const outcome = [];
      if (s.blocked) outcome.push(el('span', { class: 'badge block', text: s.blocked + ' blocked' }));
      if (s.error_code) outcome.push(el('span', { class: 'badge err', text: s.error_code }));
      if (s.lost) outcome.push(el('span', { class: 'badge lost', text: 'records lost' }));
      const tried = failoverOf(s);
      if (tried.length) outcome.push(el('span', { class: 'badge lost', title: tried.map(triedText).join('; '), text: 'failed over' }));
      if (!s.ended_at) outcome.push(el('span', { class: 'badge live', text: 'in flight' }));
      else if (!s.error_code && s.finish) outcome.push(el('span', { class: 'muted', text: s.finish }));
      place(s, el('tr', { class: 'click', 'data-sid': s.sid, 'data-team': s.team || '', 'data-user': s.user || '',
                          onclick: () => { location.hash = '#/stream/' + s.sid; } },
        el('td', { text: time(s.started_at, true) }), el('td', { class: 'mono', text: shortSid(s.sid) }),
        el('td', { text: s.model || '' }), el('td', { text: s.provider || '' }), el('td', { text: s.client || '' }),
        el('td', { class: 'mono', text: s.client_key || '' }), el('td', { text: who(s.team, s.user) }),
        el('td', { text: String(s.calls) }), el('td', {}, outcome),
        el('td', { text: duration(s.duration_ms) }), el('td', { class: 'small', text: s.last_user || '' })));
      before = s.started_at;
    }
    if (!table.children.length) table.append(el('tr', {}, el('td', { colSpan: 11, class: 'empty', text: 'No stream matches.' })));
    more.hidden = !data.more;
  };
  more.addEventListener('click', load);
  load();
}

// --------------------------------------------------------------------------
// Providers: what the record says of each (the ingests' failover)

// The providers a stream tried before the one that served it ("att" of its
// start, stored as the stream's failover), [] when the first served.
function failoverOf(s) {
  if (!s.failover) return [];
  try { const a = JSON.parse(s.failover); return Array.isArray(a) ? a : []; } catch (e) { return []; }
}

function triedText(t) {
  const why = t.result === 'ok' ? 'served'
    : t.result === 'http_status' || t.result === 'key_refused' ? (t.result === 'key_refused' ? 'key refused, ' : '') + 'HTTP ' + t.status
    : t.result === 'held' || t.result === 'ejected' ? 'passed by: ' + t.result + ' for ' + Math.round((t.until_ms || 0) / 1000) + ' s more'
    : t.result;
  return t.provider + (t.model ? ' (' + t.model + ')' : '') + ': ' + why + (t.retry_after_s !== undefined ? ', Retry-After ' + t.retry_after_s + ' s' : '');
}

// The latest streams' providers: how many each served, how often a stream
// left it and why, and when a stream last found it ejected. From the
// record (every ingest's), not from one ingest's live state: that is its
// sluice_provider_state gauge.
async function viewProviders(params) {
  clear();
  const limit = Number(params.get('limit')) || 500;
  $main.append(el('h1', { text: 'Providers' }),
    el('p', { class: 'muted', text: 'From the latest ' + limit + ' streams of the record: the providers that served them, those a stream left for the next one (and why), and those it found ejected. An ingest\'s own view is its sluice_provider_state and sluice_provider_ejections_total metrics.' }));
  let data;
  try { data = await api('/api/streams?limit=' + limit); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const by = new Map();
  const get = (name) => { if (!by.has(name)) by.set(name, { served: 0, left: new Map(), ejected: 0, lastEjected: null }); return by.get(name); };
  for (const s of data.streams) {
    if (s.provider && !s.error_code) get(s.provider).served++;
    for (const t of failoverOf(s)) {
      if (t.result === 'ok') continue;
      const p = get(t.provider);
      if (t.result === 'ejected') { p.ejected++; if (!p.lastEjected || s.started_at > p.lastEjected) p.lastEjected = s.started_at; continue; }
      const why = t.result === 'http_status' ? 'HTTP ' + t.status : t.result;
      p.left.set(why, (p.left.get(why) || 0) + 1);
    }
  }
  const table = el('table', { class: 'list' }, el('tr', {}, el('th', { text: 'provider' }), el('th', { text: 'served' }),
    el('th', { text: 'left for the next (why)' }), el('th', { text: 'found ejected' }), el('th', { text: 'last found ejected' })));
  for (const [name, p] of [...by.entries()].sort()) {
    table.append(el('tr', { 'data-provider': name }, el('td', { class: 'mono', text: name }), el('td', { text: String(p.served) }),
      el('td', { text: [...p.left.entries()].map(([k, v]) => k + ' × ' + v).join(', ') }),
      el('td', { text: String(p.ejected) }), el('td', { text: p.lastEjected ? time(p.lastEjected, true) : '' })));
  }
  if (!by.size) table.append(el('tr', {}, el('td', { colSpan: 5, class: 'empty', text: 'No stream yet.' })));
  $main.append(el('div', { class: 'panel' }, table));
}

// --------------------------------------------------------------------------
// A stream whole: its blocks in order, each verdict beside its call

async function viewStream(sid) {
  clear();
  let data;
  try { data = await api('/api/streams/' + sid); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const s = data.stream;
  const kv = (k, v) => v === null || v === undefined || v === '' ? [] : [el('div', { class: 'k', text: k }), el('div', {}, v)];
  const usage = s.usage_in !== null || s.usage_out !== null
    ? (s.usage_in ?? '?') + ' in, ' + (s.usage_out ?? '?') + ' out' + (s.usage_estimated ? ' (estimated from bytes: the upstream reported none)' : '')
    : null;
  $main.append(el('h1', {}, 'Stream ', el('span', { class: 'mono', text: s.sid })),
    el('div', { class: 'grid2' },
      el('div', { class: 'panel' }, el('div', { class: 'kv' },
        kv('started', time(s.started_at, true)), kv('ended', s.ended_at ? time(s.ended_at, true) + ' (' + duration(s.duration_ms) + ')' : 'not recorded (in flight, or lost)'),
        kv('MCP request', s.mcp ? el('span', { class: 'mono', text: s.mcp }) : null),
        kv('model', s.model), kv('upstream model', s.response_model), kv('provider', s.provider),
        kv('providers tried', failoverOf(s).length ? el('ol', { class: 'small' }, failoverOf(s).map((t) => el('li', { class: 'mono', text: triedText(t) }))) : null),
        kv('dialects', (s.client || '?') + ' client, ' + (s.upstream || '?') + ' upstream' + (s.streaming ? ', streaming' : ', not streaming')),
        kv('client key', s.client_key), kv('team', s.team), kv('user', s.user),
        kv('policy', s.policy ? el('a', { href: '#/policy?id=' + encodeURIComponent(s.policy), class: 'mono', text: s.policy }) : null), kv('finish', s.finish ? s.finish + (s.finish_raw ? ' (' + s.finish_raw + ')' : '') : null),
        kv('usage', usage), kv('cost', dollars(s.cost_usd_micro)),
        kv('error', s.error_code ? s.error_code + (s.error_status ? ' ' + s.error_status : '') + ' (' + s.error_source + '): ' + (s.error_message || '') : null),
        kv('records lost', s.lost ? s.lost + ' gap(s): this stream may be incomplete' : null))),
      el('div', { class: 'panel' }, el('div', { class: 'kv' }, kv('last user message', s.last_user), kv('tools', s.tools)),
        el('p', {}, el('a', { href: '#/try?sid=' + s.sid, text: 'Try a policy on this stream →' })))));
  const items = data.blocks.map((b) => Object.assign({ type: 'block' }, b)).concat(data.verdicts.map((v) => Object.assign({ type: 'verdict' }, v)));
  items.sort((a, b) => a.seq - b.seq);
  const list = el('div', { class: 'timeline panel' });
  for (const it of items) {
    if (it.type === 'verdict') {
      const shadow = it.side === 'shadow';
      list.append(el('div', { class: 'item', 'data-side': it.side }, el('div', { class: 'k', text: (shadow ? 'would-be verdict #' : 'verdict #') + it.index }),
        el('div', { class: 'verdict ' + it.action, 'data-tool': it.tool || '', 'data-action': it.action },
          el('div', { class: 'row' }, el('strong', { class: 'mono', text: it.tool || '?' }), badge(it.action),
            el('span', { class: 'tag', text: it.rule ? 'rule ' + it.rule : 'no rule' }), el('span', { class: 'tag', text: 'check ' + it.check }),
            shadow ? el('span', { class: 'tag', text: 'shadow mode: nothing was done' }) : null,
            el('span', { class: 'muted small', text: micros(it.latency_us) })),
          el('div', { class: 'reason', text: it.reason || '' }),
          it.judge_model ? el('div', { class: 'muted small', text: 'LLM judge ' + it.judge_model + (it.probability !== null ? ', p = ' + it.probability : '') }) : null,
          el('pre', { text: pretty(it.arguments) + (it.truncated ? '\n… cut at the store\'s bound (' + it.arguments_bytes + ' bytes)' : '') }))));
    } else {
      const label = it.kind + ' #' + it.index + (it.incomplete ? ' (cut: ' + it.incomplete + ')' : '');
      const body = it.kind === 'tool_call'
        ? el('div', {}, el('strong', { class: 'mono', text: it.name || '' }), el('pre', { text: pretty(it.content) }))
        : el('div', { class: it.replaced ? 'notice' : '' }, it.replaced ? el('div', { class: 'muted small', text: 'written by the judge in place of the call' }) : null,
             el('div', { text: it.content || '' }));
      list.append(el('div', { class: 'item', 'data-kind': it.kind }, el('div', { class: 'k', text: label }), body));
    }
  }
  if (!items.length) list.append(el('div', { class: 'empty', text: 'No block recorded.' }));
  $main.append(el('h2', { text: 'What happened, in order' }), list);
  const chain = data.chain || [];
  $main.append(el('h2', { text: 'Its place in the chain' }), chain.length
    ? el('table', { class: 'chain-places' }, el('tr', {}, ['position', 'record', 'seq', 'hash'].map((h) => el('th', { text: h }))),
        chain.map((c) => el('tr', {}, el('td', { text: String(c.pos) }), el('td', { text: c.kind }), el('td', { text: c.seq + (c.sub ? '.' + c.sub : '') }),
          el('td', { class: 'mono', title: c.hash, text: (c.hash || '').slice(0, 12) }))))
    : el('p', { class: 'empty', text: 'No chain entry (written before the chain began, or cut by retention).' }));
}

// --------------------------------------------------------------------------
// The hash chain: verified up to when, the head, the last checkpoint

async function viewChain() {
  clear();
  let c;
  try { c = await api('/api/chain'); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const kv = (k, v) => [el('div', { class: 'k', text: k }), el('div', {}, v)];
  const cp = c.checkpoint;
  $main.append(el('h1', { text: 'Chain' }),
    c.broken
      ? el('p', { class: 'error chain-state', 'data-state': 'broken', text: 'Broken: ' + c.broken.detail })
      : el('p', { class: 'chain-state', 'data-state': 'intact', text: 'Intact as far as verified.' }),
    el('div', { class: 'panel' }, el('div', { class: 'kv' },
      kv('head', c.head.pos + ' · ' + c.head.hash.slice(0, 16)),
      kv('verified up to', c.verified.pos + (c.verified.record_at ? ' (record of ' + time(c.verified.record_at, true) + ')' : '') +
        (c.verified.checked_at ? ', checked ' + time(c.verified.checked_at, true) : ', not yet')),
      kv('walk starts at', c.verified.from + (c.verified.from_cut ? ' (a retention cut)' : '')),
      kv('signing', c.signed ? 'key ' + c.key_id : 'no key: checkpoints are unsigned'),
      kv('last checkpoint', cp ? cp.pos + ' at ' + time(cp.at, true) + (cp.cut ? ' (retention cut)' : '') + (cp.signature ? ', signed' : ', unsigned') : 'none yet'))));
}

// --------------------------------------------------------------------------
// Charts, drawn here as SVG from the store's aggregates

const palette = ['#2f5fd0', '#c8372d', '#23834a', '#b25e09', '#6b46c1', '#0f8a8a', '#8a5a00', '#d6336c', '#495057', '#74b816'];
const actionColor = { allow: '#23834a', block: '#c8372d', drop: '#8a5a00', rewrite: '#6b46c1', terminate: '#7a1f1a' };

function chartFrame(w, h) { return svg('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + h, role: 'img' }); }

// A colour sample, set through the CSSOM (the page's policy refuses style attributes).
function swatch(color) {
  const sw = el('span', { class: 'sw' });
  sw.style.background = color;
  return sw;
}

function legend(entries) {
  return el('div', { class: 'legend' }, entries.map(([label, color]) => el('span', {}, swatch(color), label)));
}

function timeAxis(chart, x0, x1, y, from, to, label) {
  chart.append(svg('line', { class: 'axis', x1: x0, y1: y, x2: x1, y2: y }));
  for (let i = 0; i <= 4; i++) {
    const t = from + (to - from) * i / 4;
    chart.append(svg('text', { x: x0 + (x1 - x0) * i / 4, y: y + 14, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle',
                               text: (label || time)(t) }));
  }
}

function stackedBars(points, from, to, bucket, keys, colorOf, title, label) {
  const W = 640, H = 220, L = 40, R = 10, T = 10, B = 24;
  const chart = chartFrame(W, H);
  const totals = new Map();
  for (const p of points) totals.set(p.t, (totals.get(p.t) || 0) + p.n);
  const max = Math.max(1, ...totals.values());
  const x = (t) => L + (W - L - R) * (t - from) / (to - from);
  const bw = Math.max(2, (W - L - R) * bucket / (to - from) - 2);
  const stack = new Map();
  for (const p of points) {
    const below = stack.get(p.t) || 0;
    const h = (H - T - B) * p.n / max;
    const y = H - B - (H - T - B) * below / max - h;
    chart.append(svg('rect', { x: x(p.t), y, width: bw, height: h, fill: colorOf(p.key) },
      svg('title', { text: (label || time)(p.t) + ' ' + p.key + ': ' + p.n })));
    stack.set(p.t, below + p.n);
  }
  chart.append(svg('text', { x: L - 6, y: T + 8, 'text-anchor': 'end', text: String(max) }));
  timeAxis(chart, L, W - R, H - B, from, to, label);
  return el('div', { class: 'panel' }, el('h2', { text: title }), chart, legend(keys.map((k) => [k, colorOf(k)])));
}

function latencyLines(rows, from, to) {
  const W = 640, H = 220, L = 52, R = 10, T = 10, B = 24;
  const chart = chartFrame(W, H);
  const all = rows.flatMap((r) => [r[1], r[2], r[3]]).filter((v) => v > 0);
  const lo = Math.max(1, Math.min(...all, 1)), hi = Math.max(10, ...all);
  const y = (v) => H - B - (H - T - B) * (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) || 1);
  const x = (t) => L + (W - L - R) * (t - from) / (to - from);
  const series = [['p50', 1, '#23834a'], ['p90', 2, '#b25e09'], ['p99', 3, '#c8372d']];
  for (const [, i, color] of series) {
    const pts = rows.map((r) => x(r[0]) + ',' + y(r[i])).join(' ');
    chart.append(svg('polyline', { points: pts, fill: 'none', stroke: color, 'stroke-width': 2 }));
    for (const r of rows) chart.append(svg('circle', { cx: x(r[0]), cy: y(r[i]), r: 2.5, fill: color }, svg('title', { text: time(r[0]) + ': ' + micros(r[i]) + ' (' + r[4] + ' calls)' })));
  }
  for (const v of [lo, Math.sqrt(lo * hi), hi])
    chart.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', text: micros(Math.round(v)) }));
  timeAxis(chart, L, W - R, H - B, from, to);
  return el('div', { class: 'panel' }, el('h2', { text: 'Time the judge adds per tool call (percentiles, log scale)' }), chart,
    legend(series.map(([n, , c]) => [n, c])));
}

function modelBars(rows) {
  const W = 640, rowH = 22, L = 230, R = 60;
  const H = Math.max(40, rows.length * rowH + 10);
  const chart = chartFrame(W, H);
  const max = Math.max(1, ...rows.map((r) => r[2]));
  rows.forEach((r, i) => {
    const y = 5 + i * rowH, w = (W - L - R) * r[2] / max, e = (W - L - R) * r[3] / max;
    chart.append(svg('text', { x: L - 8, y: y + 14, 'text-anchor': 'end', text: r[0] + ' · ' + r[1] }));
    chart.append(svg('rect', { x: L, y: y + 3, width: Math.max(w, 1), height: rowH - 8, fill: '#2f5fd0' }));
    if (r[3]) chart.append(svg('rect', { x: L, y: y + 3, width: Math.max(e, 1), height: rowH - 8, fill: '#c8372d' }));
    chart.append(svg('text', { x: L + w + 6, y: y + 14, text: r[2] + (r[3] ? ' (' + r[3] + ' errors)' : '') }));
  });
  return el('div', { class: 'panel' }, el('h2', { text: 'Streams and errors per model and provider' }), chart,
    legend([['streams', '#2f5fd0'], ['errors', '#c8372d']]));
}

async function viewCharts(params) {
  clear();
  const range = Number(params.get('range') || 24 * 3600e3);
  const select = el('select', { onchange: () => { location.hash = '#/charts?range=' + select.value; } },
    [['Last hour', 3600e3], ['Last 6 hours', 6 * 3600e3], ['Last 24 hours', 24 * 3600e3], ['Last 7 days', 7 * 24 * 3600e3]]
      .map(([t, v]) => el('option', { value: v, text: t, selected: v === range })));
  $main.append(el('div', { class: 'row' }, el('h1', { text: 'Charts' }), select));
  const to = Date.now(), from = to - range;
  let st;
  try { st = await api('/api/stats?from=' + from + '&to=' + to + '&bucket=' + Math.round(range / 48)); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const keys = [...new Set(st.verdicts.map((v) => v[1] + ' · ' + v[2]))];
  const colorOf = (k) => { const action = k.split(' · ')[1]; const i = keys.indexOf(k); return action === 'allow' && keys.filter((x) => x.endsWith('allow')).length === 1 ? actionColor.allow : i < palette.length ? palette[i] : actionColor[action] || '#888'; };
  const grid = el('div', { class: 'grid2' });
  grid.append(stackedBars(st.verdicts.map((v) => ({ t: v[0], key: v[1] + ' · ' + v[2], n: v[3] })), st.from, st.to, st.bucket_ms, keys, colorOf,
                          'Verdicts per rule and action'));
  grid.append(stackedBars(st.streams.flatMap((s) => [{ t: s[0], key: 'ok', n: s[1] - s[2] }, { t: s[0], key: 'errors', n: s[2] }]), st.from, st.to, st.bucket_ms,
                          ['ok', 'errors'], (k) => (k === 'errors' ? '#c8372d' : '#2f5fd0'), 'Streams over time, and errors'));
  grid.append(modelBars(st.models));
  grid.append(latencyLines(st.latency, st.from, st.to));
  $main.append(grid);
  if (!st.verdicts.length && !st.streams.length) $main.append(el('p', { class: 'empty', text: 'Nothing recorded in this range yet.' }));
}

// --------------------------------------------------------------------------
// Shadow: what rules in shadow mode would have done, per rule: would-be
// verdicts over time, the calls and their streams (GET /api/shadow)

async function viewShadow(params) {
  clear();
  const range = Number(params.get('range') || 24 * 3600e3);
  const rule = params.get('rule') || '';
  const go = (r, g) => { location.hash = '#/shadow?range=' + g + (r ? '&rule=' + encodeURIComponent(r) : ''); };
  const select = el('select', { onchange: () => go(rule, select.value) },
    [['Last hour', 3600e3], ['Last 24 hours', 24 * 3600e3], ['Last 7 days', 7 * 24 * 3600e3], ['Last 30 days', 30 * 24 * 3600e3]]
      .map(([t, v]) => el('option', { value: v, text: t, selected: v === range })));
  $main.append(el('div', { class: 'row' }, el('h1', { text: 'Shadow' }), select),
    el('p', { class: 'muted', text: 'Rules in shadow mode (mode: shadow, or a keys file\'s shadow_policy) decide nothing: each call went as its own verdict says. Here is what they would have done.' }));
  const to = Date.now(), from = to - range;
  let data;
  try { data = await api('/api/shadow?from=' + from + '&to=' + to + '&bucket=' + Math.round(range / 48) + (rule ? '&rule=' + encodeURIComponent(rule) : '')); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  if (!data.rules.length) { $main.append(el('p', { class: 'empty', text: 'No rule in shadow mode judged a call in this range.' })); return; }
  $main.append(el('div', { class: 'panel' }, el('table', {},
    el('thead', {}, el('tr', {}, ['Rule', 'Would have blocked', 'Would have allowed', 'Would have asked', 'All'].map((h) => el('th', { text: h })))),
    el('tbody', {}, data.rules.map((r) => el('tr', { class: r.rule === rule ? 'picked' : '' },
      el('td', {}, el('a', { href: '#/shadow?range=' + range + '&rule=' + encodeURIComponent(r.rule), class: 'mono', text: r.rule })),
      el('td', { text: count(r.would_block) }), el('td', { text: count(r.would_allow) }), el('td', { text: count(r.would_ask) }),
      el('td', { text: count(r.total) })))))),
    rule ? el('p', {}, el('a', { href: '#/shadow?range=' + range, text: '← every rule' })) : null);
  const keys = [...new Set(data.over_time.map((v) => v[1] + ' · ' + v[2]))];
  const colorOf = (k) => { const i = keys.indexOf(k); return i < palette.length ? palette[i] : actionColor[k.split(' · ')[1]] || '#888'; };
  $main.append(stackedBars(data.over_time.map((v) => ({ t: v[0], key: v[1] + ' · ' + v[2], n: v[3] })), data.from, data.to, data.bucket_ms, keys, colorOf,
                           'Would-be verdicts per rule and action'));
  $main.append(el('h2', { text: 'Calls' + (data.more ? ' (the newest ' + data.calls.length + ')' : '') }),
    el('div', { class: 'panel' }, el('table', {},
      el('thead', {}, el('tr', {}, ['When', 'Stream', 'Tool', 'Would have', 'Check', 'Rule', 'Who', 'Why'].map((h) => el('th', { text: h })))),
      el('tbody', {}, data.calls.map((c) => el('tr', {}, el('td', { text: time(c.at, true) }),
        el('td', {}, el('a', { href: '#/stream/' + c.sid, class: 'mono', text: shortSid(c.sid) })), el('td', { class: 'mono', text: c.tool || '' }),
        el('td', {}, badge(c.action)), el('td', { text: c.check }), el('td', { class: 'mono', text: c.rule || '(default)' }),
        el('td', { text: who(c.team, c.user) }), el('td', { class: 'small', text: c.reason || '' })))))));
  $main.append(el('h2', { text: 'Streams' }),
    el('p', {}, data.streams.map((s) => el('a', { href: '#/stream/' + s.sid, class: 'tag mono', text: shortSid(s.sid) + ' (' + s.calls + ')' }))));
}

// --------------------------------------------------------------------------
// Usage: tokens and money per team, user or model and UTC day

const DAY_MS = 24 * 3600e3;

async function viewUsage(params) {
  clear();
  const days = Number(params.get('days') || 30);
  const group = params.get('group') || 'team';
  const metric = params.get('metric') || 'tokens';
  const go = (k, v) => { const q = new URLSearchParams({ days, group, metric }); q.set(k, v); location.hash = '#/usage?' + q.toString(); };
  const select = (name, value, options) => el('select', { name, onchange: (e) => go(name, e.target.value) },
    options.map(([t, v]) => el('option', { value: v, text: t, selected: String(v) === String(value) })));
  $main.append(el('div', { class: 'row' }, el('h1', { text: 'Usage' }),
    select('days', days, [['Last 7 days', 7], ['Last 30 days', 30], ['Last 90 days', 90]]),
    select('group', group, [['per team', 'team'], ['per user', 'user'], ['per model', 'model']]),
    select('metric', metric, [['tokens', 'tokens'], ['cost', 'cost'], ['requests', 'requests']])),
    el('p', { class: 'muted', text: 'Tokens as the upstreams reported them, or estimated from bytes where they reported none; cost at the routes file\'s prices. Days are UTC.' }));
  const to = Date.now() + 1, from = Math.floor((to - days * DAY_MS) / DAY_MS) * DAY_MS;
  let data;
  try { data = await api('/api/usage?from=' + from + '&to=' + to + '&group=' + group); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const keyOf = (r) => group === 'user' ? who(r.team || '(no team)', r.user || '(no user)') : group === 'team' ? r.team || '(no team)' : r.model || '?';
  const valueOf = (r) => metric === 'cost' ? r.cost_usd_micro : metric === 'requests' ? r.requests : r.input + r.output;
  const totals = new Map();
  for (const r of data.rows) {
    const k = keyOf(r);
    const t = totals.get(k) || { key: k, requests: 0, input: 0, output: 0, estimated: 0, cost: 0 };
    t.requests += r.requests; t.input += r.input; t.output += r.output; t.estimated += r.estimated; t.cost += r.cost_usd_micro;
    totals.set(k, t);
  }
  const ranked = [...totals.values()].sort((a, b) => (b.input + b.output) - (a.input + a.output) || a.key.localeCompare(b.key));
  const keys = ranked.map((t) => t.key);
  const colorOf = (k) => palette[keys.indexOf(k) % palette.length];
  const points = data.rows.map((r) => ({ t: r.day, key: keyOf(r), n: valueOf(r) })).filter((p) => p.n > 0);
  const title = (metric === 'cost' ? 'Cost (micro-dollars)' : metric === 'requests' ? 'Requests' : 'Tokens (input + output)') + ' per UTC day';
  const utcDay = (t) => new Date(t).toISOString().slice(0, 10);
  const chart = stackedBars(points, from, from + (days + 1) * DAY_MS, DAY_MS, keys, colorOf, title, utcDay);
  chart.id = 'usage-chart';
  const sum = ranked.reduce((a, t) => ({ requests: a.requests + t.requests, input: a.input + t.input, output: a.output + t.output,
                                         estimated: a.estimated + t.estimated, cost: a.cost + t.cost }),
                            { requests: 0, input: 0, output: 0, estimated: 0, cost: 0 });
  const cells = (t) => [el('td', { class: 'num', text: count(t.requests) }), el('td', { class: 'num', text: count(t.input) }),
    el('td', { class: 'num', text: count(t.output) }), el('td', { class: 'num', text: count(t.estimated) }), el('td', { class: 'num', text: dollars(t.cost) })];
  const table = el('table', { id: 'usage-table' },
    el('thead', {}, el('tr', {}, [group === 'user' ? 'Team / user' : group === 'team' ? 'Team' : 'Model', 'Requests', 'Input tokens', 'Output tokens',
      'Of them estimated', 'Cost'].map((h) => el('th', { text: h })))),
    el('tbody', {}, ranked.map((t) => el('tr', { 'data-key': t.key }, el('td', {}, swatch(colorOf(t.key)), ' ', t.key), cells(t)))),
    el('tfoot', {}, el('tr', {}, el('th', { text: 'All' }), cells(sum))));
  $main.append(el('div', { class: 'grid2' }, chart, el('div', { class: 'panel' }, el('h2', { text: 'Totals' }), table)));
  if (!data.rows.length) $main.append(el('p', { class: 'empty', text: 'No stream recorded in this range yet.' }));
  await usageMonth();
}

// This month's spend projected to its end beside the budgets, and the
// budget alerts the gateways recorded (every role sees both: no contents).
function usd(x) { return x === null || x === undefined ? '' : dollars(x * 1e6); }
async function usageMonth() {
  let month, alerts;
  try { [month, alerts] = await Promise.all([api('/api/usage/month'), api('/api/alerts')]); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  const budget = (r) => [r.budget_usd !== null ? usd(r.budget_usd) : '', r.budget_tokens !== null ? count(r.budget_tokens) + ' tokens' : ''].filter(Boolean).join(', ') || 'none';
  const row = (name, r) => el('tr', { 'data-key': name, class: r.over_budget ? 'over' : '' },
    el('td', { class: 'mono', text: name }), el('td', { class: 'num', text: usd(r.spent_usd) }), el('td', { class: 'num', text: count(r.tokens) }),
    el('td', { class: 'num', text: usd(r.projected_month_usd) }), el('td', { class: 'num', text: count(r.projected_month_tokens) }),
    el('td', { text: budget(r) }), el('td', {}, r.over_budget ? el('span', { class: 'badge block', text: 'over budget' }) : ''));
  const head = (first) => el('thead', {}, el('tr', {}, [first, 'Spent', 'Tokens', 'Projected', 'Projected tokens', 'Monthly budget', ''].map((h) => el('th', { text: h }))));
  $main.append(el('div', { class: 'panel', id: 'projection' },
    el('h2', { text: 'This month (' + month.month + '), projected to its end' }),
    el('p', { class: 'muted', text: Math.round(month.elapsed * 1000) / 10 + '% of the month gone; projected = spent so far / that fraction. Flagged where it passes the monthly budget.' }),
    el('table', { id: 'projection-teams' }, head('Team'), el('tbody', {}, month.teams.map((r) => row(r.team || '(no team)', r)))),
    el('table', { id: 'projection-keys' }, head('Key'), el('tbody', {}, month.keys.map((r) => row(r.key || '(no key)', r))))));
  const list = alerts.alerts;
  const amount = (a, v) => a.limit === 'budget_usd' ? usd(v) : count(v) + ' tokens';
  $main.append(el('div', { class: 'panel', id: 'alerts' }, el('h2', { text: 'Alerts' }),
    el('p', { class: 'muted', text: 'Thresholds of a day\'s tokens or a month\'s budget crossed, as the gateways posted them (each once), recorded in the hash chain.' }),
    list.length ? el('table', { id: 'alerts-table' },
      el('thead', {}, el('tr', {}, ['When', 'Who', 'Limit', 'Threshold', 'Used', 'Period'].map((h) => el('th', { text: h })))),
      el('tbody', {}, list.map((a) => el('tr', { 'data-id': a.id },
        el('td', { text: time(a.crossed_at, true) }), el('td', { class: 'mono', text: a.subject }), el('td', { text: a.limit }),
        el('td', { class: 'num', text: a.threshold + '%' }), el('td', { class: 'num', text: amount(a, a.used) + ' of ' + amount(a, a.max) }),
        el('td', { text: a.period + ' ' + a.window })))))
      : el('p', { class: 'empty', text: 'No alert in the last 30 days.' })));
}

// --------------------------------------------------------------------------
// Policy: what each judge runs, file by file (the default, and each file a
// keys file names for its teams and keys), and what it refused to load

async function viewPolicy(params) {
  clear();
  $main.append(el('h1', { text: 'Policy' }),
    el('p', { class: 'muted', text: 'Each judge reports every policy it holds every few seconds and when it loads one: its default, and with a keys file each team\'s or key\'s own file (a team file\'s included base is read with it). A reload it refuses keeps the old policy, and says why here.' }));
  let data, gaps;
  try { [data, gaps] = await Promise.all([api('/api/policies'), api('/api/gaps')]); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  if (!data.policies.length) $main.append(el('p', { class: 'empty', text: 'No judge has reported yet (they do every 5 s).' }));
  // What a judge runs for a file is the version it reported last for it.
  const key = (p) => p.judge + '\u0000' + (p.name || '');
  const current = new Map();
  for (const p of data.policies) if (!current.has(key(p)) || current.get(key(p)).last_seen < p.last_seen) current.set(key(p), p);
  const files = [...new Set(data.policies.map((p) => p.name || ''))].sort();
  const wanted = params.get('id');
  if (files.length > 1) $main.append(el('p', { class: 'muted', text: files.length + ' policy files: ' + files.join(', ') }));
  for (const file of files) {
    if (files.length > 1) $main.append(el('h2', { class: 'mono', text: file || '(no file)' }));
    for (const p of data.policies.filter((q) => (q.name || '') === file)) {
      const now = current.get(key(p)) === p;
      $main.append(el('div', { class: p.policy === wanted ? 'panel picked' : 'panel' },
        el('div', { class: 'row' }, el('strong', { text: p.judge }), el('span', { class: 'tag mono', text: p.policy }),
          now ? el('span', { class: 'badge allow', text: 'running' }) : el('span', { class: 'badge', text: 'earlier' }),
          p.policy === wanted ? el('span', { class: 'badge', text: 'this stream\'s' }) : null,
          el('span', { class: 'muted small', text: (p.name || '') + ' · loaded ' + time(p.loaded_at, true) + ' · seen ' + time(p.first_seen, true) + ' – ' + time(p.last_seen, true) })),
        p.failures ? el('p', { class: 'error', text: p.failures + ' reload(s) refused' + (p.last_error ? ': ' + p.last_error : '') }) : null,
        el('pre', { text: p.source || '(no file: every call allowed)' })));
    }
  }
  $main.append(el('h2', { text: 'Records the emitters could not keep' }),
    gaps.lost ? el('div', { class: 'panel' }, el('p', { class: 'error', text: gaps.lost + ' records lost in all' }),
      el('table', {}, el('thead', {}, el('tr', {}, ['When', 'Emitter', 'Lost', 'Streams'].map((h) => el('th', { text: h })))),
        el('tbody', {}, gaps.gaps.map((g) => el('tr', {}, el('td', { text: time(g.since, true) + ' – ' + time(g.at) }), el('td', { text: g.emitter }),
          el('td', { text: String(g.lost) }), el('td', { text: String(g.streams) }))))))
      : el('p', { class: 'muted', text: 'None: every record the emitters made is in the store.' }));
}

// --------------------------------------------------------------------------
// Tools: what each team's agents can call (every definition their requests
// carried, by server), what changed and when, and two definitions of one
// tool side by side in one diff

// A definition as lines to compare: its description, then its schema with
// keys sorted (the order a client wrote them in is not a change).
function sortedJson(v) {
  if (Array.isArray(v)) return v.map(sortedJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortedJson(v[k])]));
  return v;
}
function schemaText(schema) {
  if (schema === null || schema === undefined) return '';
  return typeof schema === 'string' ? schema : JSON.stringify(sortedJson(schema), null, 2);
}

// The edit script between two token lists: [['=', t] | ['-', t] | ['+', t]].
// The common head and tail are taken first; the middle by longest common
// subsequence when it is small enough, else as all removed then all added.
const DIFF_CELLS_MAX = 4e6;
function diffTokens(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const out = a.slice(0, head).map((t) => ['=', t]);
  const x = a.slice(head, a.length - tail), y = b.slice(head, b.length - tail);
  if (x.length * y.length > DIFF_CELLS_MAX) {
    x.forEach((t) => out.push(['-', t]));
    y.forEach((t) => out.push(['+', t]));
  } else {
    const n = x.length, m = y.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push(['=', x[i]]); i++; j++; }
      else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(['+', y[j]]); j++; }
      else { out.push(['-', x[i]]); i++; }
    }
  }
  a.slice(a.length - tail).forEach((t) => out.push(['=', t]));
  return out;
}

// The description word by word, inline; the schema line by line, unified.
function definitionDiff(older, newer) {
  const words = (t) => (t || '').split(/(\s+)/).filter((w) => w !== '');
  const desc = diffTokens(words(older.description), words(newer.description));
  const lines = (t) => t ? t.split('\n') : [];
  const schema = diffTokens(lines(schemaText(older.schema)), lines(schemaText(newer.schema)));
  const mark = { '-': 'del', '+': 'ins', '=': null };
  const changed = (ops) => ops.some(([op]) => op !== '=');
  return el('div', { class: 'tooldiff' },
    el('div', { class: 'muted small', text: older.digest.slice(0, 12) + ' (first seen ' + time(older.first_seen, true) + ') → ' +
                                             newer.digest.slice(0, 12) + ' (first seen ' + time(newer.first_seen, true) + ')' }),
    el('h3', { text: 'Description' + (changed(desc) ? '' : ' (unchanged)') }),
    el('pre', { class: 'diff-desc' }, desc.map(([op, t]) => mark[op] ? el(mark[op], { text: t }) : t)),
    el('h3', { text: 'Schema' + (changed(schema) ? '' : ' (unchanged)') }),
    el('pre', { class: 'diff-schema' }, schema.map(([op, t]) =>
      el('div', { class: 'line ' + (mark[op] || 'same'), text: (op === '=' ? '  ' : op + ' ') + t }))));
}

function teamName(team) { return team === '' ? '(no team)' : team; }

async function viewTools(params) {
  clear();
  $main.append(el('h1', { text: 'Tools' }),
    el('p', { class: 'muted', text: 'Every tool definition the requests of each team carried, by MCP server: once per definition, with who sent it to which model, first and last seen. A tool whose definition changed has two rows; its diff is below.' }));
  const q = new URLSearchParams();
  for (const k of ['team', 'name', 'server']) if (params.get(k)) q.set(k, params.get(k));
  if (params.get('changed')) q.set('changed', '1');
  const form = el('form', { class: 'filters', id: 'tool-filters', onsubmit: (e) => {
    e.preventDefault();
    const f = new URLSearchParams();
    for (const input of form.querySelectorAll('input[type="text"]')) if (input.value) f.set(input.name, input.value);
    if (form.querySelector('input[name="changed"]').checked) f.set('changed', '1');
    location.hash = '#/tools?' + f.toString();
  } },
    ['team', 'name', 'server'].map((k) => el('label', {}, k, el('input', { type: 'text', name: k, value: params.get(k) || '' }))),
    el('label', {}, 'changed only', el('input', { type: 'checkbox', name: 'changed', checked: !!params.get('changed') })),
    el('button', { type: 'submit', text: 'Show' }));
  $main.append(form);
  let data;
  try { data = await api('/api/tools?' + q.toString()); } catch (e) { $main.append(el('p', { class: 'error', text: e.message })); return; }
  if (!data.tools.length) { $main.append(el('p', { class: 'empty', text: 'No tool definition recorded yet.' })); return; }
  const byKey = (t) => t.team + '\u0000' + t.name;
  const defs = new Map();
  for (const t of data.tools) { if (!defs.has(byKey(t))) defs.set(byKey(t), []); defs.get(byKey(t)).push(t); }

  // What changed: each name with several definitions, its last two diffed.
  if (data.changes.length) {
    const changes = el('div', { id: 'tool-changes' }, el('h2', { text: 'What changed' }));
    for (const c of data.changes) {
      const all = defs.get(c.team + '\u0000' + c.name) || [];
      if (all.length < 2) continue;
      changes.append(el('div', { class: 'panel change', 'data-team': c.team, 'data-name': c.name },
        el('div', { class: 'row' }, el('strong', { class: 'mono', text: c.name }), el('span', { class: 'tag', text: teamName(c.team) }),
          el('span', { class: 'badge block', text: all.length + ' definitions' }),
          el('span', { class: 'muted small', text: 'changed ' + time(all[0].first_seen, true) })),
        definitionDiff(all[1], all[0])));
    }
    $main.append(changes);
  }

  // What each team can call, by server.
  if (data.more) $main.append(el('p', { class: 'muted', text: 'More definitions than shown: narrow the filter.' }));
  const teams = [...new Set(data.tools.map((t) => t.team))];
  for (const team of teams) {
    const section = el('section', { class: 'team', 'data-team': team }, el('h2', { text: teamName(team) }));
    const rows = data.tools.filter((t) => t.team === team);
    const servers = [...new Set(rows.map((t) => t.server === null ? '' : t.server))];
    for (const server of servers) {
      section.append(el('h3', { text: server ? 'server ' + server : 'no server named' }),
        el('table', { class: 'tools' },
          el('thead', {}, el('tr', {}, ['Tool', 'Definition', 'Description', 'Seen', 'Keys', 'Models', 'Requests'].map((h) => el('th', { text: h })))),
          el('tbody', {}, rows.filter((t) => (t.server === null ? '' : t.server) === server).map((t) =>
            el('tr', { 'data-name': t.name, 'data-digest': t.digest },
              el('td', { class: 'mono' }, t.tool || t.name, t.definitions > 1 ? el('span', { class: 'badge block', text: 'changed' }) : null),
              el('td', { class: 'mono small', title: t.digest, text: t.digest.slice(0, 12) + (t.truncated ? ' (truncated)' : '') }),
              el('td', {}, el('details', {}, el('summary', { text: (t.description || '').slice(0, 140) || '(none)' }),
                el('pre', { text: t.description || '' }), el('pre', { text: schemaText(t.schema) }))),
              el('td', { class: 'small', text: time(t.first_seen, true) + ' – ' + time(t.last_seen, true) }),
              el('td', { class: 'small mono', text: t.key_ids.join(', ') }),
              el('td', { class: 'small mono', text: t.models.join(', ') }),
              el('td', { class: 'num', text: count(t.requests) }))))));
    }
    $main.append(section);
  }
}

// --------------------------------------------------------------------------
// Try it: a policy over a capture, with the replay library

async function viewTry(params) {
  clear();
  const dialect = el('select', { name: 'dialect' }, ['openai', 'anthropic', 'responses', 'gemini'].map((d) => el('option', { value: d, text: d })));
  const client = el('select', { name: 'client' }, [el('option', { value: '', text: 'the same dialect' }),
    ...['openai', 'anthropic', 'responses', 'gemini'].map((d) => el('option', { value: d, text: d }))]);
  const capture = el('textarea', { name: 'capture', rows: 16, placeholder: 'An upstream stream as the provider sent it (SSE), or one JSON chunk per line.' });
  const policy = el('textarea', { name: 'policy', rows: 16, placeholder: 'rules:\n  - id: no-rm-rf\n    tool: run_shell\n    ...' });
  const model = el('input', { name: 'model', placeholder: 'the model asked for' });
  const tools = el('textarea', { name: 'tools', rows: 3, placeholder: '[{"name":"run_shell","schema":{...}}]: for schema rules' });
  const lastUser = el('input', { name: 'last_user', placeholder: 'the last user message (LLM judge prompts)' });
  const sid = el('input', { name: 'sid', placeholder: 'a stream id from History', value: params.get('sid') || '' });
  const out = el('div', { id: 'try-result' });
  const run = el('button', { text: 'Run the policy' });
  const loadRecorded = async () => {
    if (!sid.value) return;
    try {
      const c = await api('/api/capture/' + sid.value.trim());
      capture.value = c.capture; dialect.value = c.dialect; model.value = c.model || ''; tools.value = c.tools || ''; lastUser.value = c.last_user || '';
    } catch (e) { out.replaceChildren(el('p', { class: 'error', text: e.message })); }
  };
  run.addEventListener('click', async () => {
    run.disabled = true;
    out.replaceChildren(el('p', { class: 'muted', text: 'Running…' }));
    try {
      const res = await fetch('/api/try', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ capture: capture.value, dialect: dialect.value, client: client.value || undefined, policy: policy.value, model: model.value || undefined,
                               tools: tools.value || undefined, last_user: lastUser.value || undefined }) });
      const r = await res.json();
      showTry(r, out);
    } catch (e) { out.replaceChildren(el('p', { class: 'error', text: e.message })); }
    run.disabled = false;
  });
  $main.append(el('h1', { text: 'Try it' }),
    el('p', { class: 'muted', text: 'A policy over a captured stream, offline: the same decoder, aggregator, judge and renderer as the pipeline (the replay library). LLM judges are not asked here: their rule\'s on_error decides, and the verdict says so.' }),
    el('div', { class: 'grid2' },
      el('div', { class: 'panel' }, el('div', { class: 'row' }, 'Recorded stream', sid, el('button', { class: 'ghost', type: 'button', text: 'Load', onclick: loadRecorded }),
          'or paste a capture in', dialect),
        capture, el('details', {}, el('summary', { text: 'The request behind it' }), el('div', { class: 'row' }, model, lastUser), tools)),
      el('div', { class: 'panel' }, el('div', { class: 'row' }, 'Policy (YAML)', el('button', { class: 'ghost', type: 'button', text: 'Use the running policy',
          onclick: async () => { const d = await api('/api/policies'); if (d.policies.length) policy.value = d.policies[0].source || ''; } })), policy)),
    el('div', { class: 'row' }, run, 'rendered for a client of', client), out);
  if (!policy.value) {
    try { const d = await api('/api/policies'); if (d.policies.length) policy.value = d.policies[0].source || ''; } catch (e) { /* none yet */ }
  }
  if (sid.value) loadRecorded();
}

const dialectNames = { openai: 'an OpenAI Chat', anthropic: 'an Anthropic Messages', responses: 'an OpenAI Responses',
                       gemini: 'a Gemini' };

function showTry(r, out) {
  out.replaceChildren();
  if (r.policy_error) { out.append(el('p', { class: 'error', text: 'The policy does not load: ' + r.policy_error })); return; }
  if (r.error) out.append(el('p', { class: 'error', text: r.error }));
  if (!r.verdicts) return;
  out.append(el('h2', { text: 'Verdicts' }), r.verdicts.length
    ? el('div', { class: 'panel' }, r.verdicts.map((v) => el('div', { class: 'call', 'data-tool': v.name || '', 'data-action': v.action },
        el('span', { class: 'tool', text: v.name || '?' }), badge(v.action),
        el('span', { class: 'why' }, el('span', { class: 'tag', text: v.rule ? 'rule ' + v.rule : 'check ' + v.check }), v.reason || ''))))
    : el('p', { class: 'muted', text: 'No tool call to judge.' }));
  out.append(el('div', { class: 'grid2' },
    el('div', {}, el('h2', { text: 'Blocks, as released' }), el('pre', { text: r.blocks.map((b) => JSON.stringify(b)).join('\n') + (r.finish ? '\n' + JSON.stringify(r.finish) : '') })),
    el('div', {}, el('h2', { text: 'What ' + (dialectNames [r.client] || r.client) + ' client would receive' }),
      el('pre', { class: 'client', text: r.client }))));
}

// --------------------------------------------------------------------------
// Backtest: what a policy would have decided of the recorded calls

const backtestKinds = ['newly_blocked', 'newly_allowed', 'rewritten', 'asked', 'needs_judge'];

async function viewBacktest(params) {
  clear();
  const policy = el('textarea', { name: 'policy', rows: 16, placeholder: 'rules:\n  - id: no-rm-rf\n    tool: run_shell\n    ...' });
  const pick = el('select', { name: 'pick' }, el('option', { value: '', text: 'paste one, or pick a policy the judges run' }));
  const since = el('input', { name: 'since', value: params.get('since') || '7d', size: 24, placeholder: '30d, 24h, 2026-05-20T14:00:00Z' });
  const until = el('input', { name: 'until', value: params.get('until') || '', size: 24, placeholder: 'now' });
  const team = el('input', { name: 'team', value: params.get('team') || '', placeholder: 'every team' });
  const out = el('div', { id: 'backtest-result' });
  const run = el('button', { id: 'backtest-run', text: 'Backtest' });
  const sources = [];
  pick.addEventListener('change', () => { if (pick.value !== '') policy.value = sources [Number(pick.value)]; });
  run.addEventListener('click', async () => {
    run.disabled = true;
    out.replaceChildren(el('p', { class: 'muted', text: 'Judging the recorded calls again…' }));
    try {
      const res = await fetch('/api/backtest', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ policy: policy.value, since: since.value, until: until.value || undefined, team: team.value || undefined }) });
      const r = await res.json().catch(() => ({ error: res.statusText }));
      if (!res.ok) throw new Error(r.error || res.statusText);
      showBacktest(r, out);
    } catch (e) { out.replaceChildren(el('p', { class: 'error', text: e.message })); }
    run.disabled = false;
  });
  $main.append(el('h1', { text: 'Backtest' }),
    el('p', { class: 'muted', text: 'Every tool call recorded in the window, judged again under this policy with its stream\'s recorded context, against what was decided then (sluice-policy backtest). LLM judges and decision services are not asked: their recorded answers are reused where the input is the same, else the call needs the judge.' }),
    el('div', { class: 'panel' }, el('div', { class: 'row' }, 'Policy (YAML)', pick), policy,
      el('div', { class: 'row' }, 'Since', since, 'until', until, 'team', team, run)), out);
  try {
    const d = await api('/api/policies');
    d.policies.forEach((p, i) => {
      sources.push(p.source || '');
      pick.append(el('option', { value: String(i), text: p.judge + ' · ' + p.policy + (p.name ? ' · ' + p.name : '') }));
    });
  } catch (e) { pick.hidden = true; /* admins only: paste one */ }
}

function showBacktest(r, out) {
  const cell = (n) => el('td', { class: 'num', text: count(n || 0) });
  const table = (title, rows) => {
    const names = Object.keys(rows || {});
    if (!names.length) return null;
    return el('div', {}, el('h2', { text: title }), el('table', { class: 'backtest-table', 'data-table': title },
      el('tr', {}, el('th', { text: '' }), backtestKinds.map((k) => el('th', { class: 'num', text: k.replace('_', ' ') }))),
      names.map((n) => el('tr', { 'data-key': n }, el('td', { class: 'mono', text: n }), backtestKinds.map((k) => cell(rows [n][k]))))));
  };
  out.replaceChildren(el('div', {},
    el('p', { id: 'backtest-totals' }, count(r.calls) + ' calls judged again: ',
      backtestKinds.map((k) => el('span', { class: 'tag', 'data-kind': k, text: k.replace('_', ' ') + ' ' + count(k === 'needs_judge' ? r.needs_judge : r.changed [k]) })),
      el('span', { class: 'tag', text: 'unchanged ' + count(r.unchanged) })),
    r.limited ? el('p', { class: 'error', text: 'Only the oldest ' + count(r.calls) + ' calls of the window were judged (the console\'s bound): narrow the window, or run sluice-policy backtest.' }) : null,
    r.calls ? null : el('p', { class: 'muted', text: 'No tool call recorded in the window.' }),
    table('By rule', r.by_rule), table('By team', r.by_team), table('By tool', r.by_tool),
    r.examples && r.examples.length ? el('div', {}, el('h2', { text: 'Examples' }), el('table', { id: 'backtest-examples' },
      el('tr', {}, ['', 'when', 'stream', 'tool', 'team', 'recorded', 'now'].map((h) => el('th', { text: h }))),
      r.examples.map((x) => el('tr', { 'data-kind': x.kind },
        el('td', { text: x.kind.replace('_', ' ') }), el('td', { text: time(x.at, true) }),
        el('td', {}, el('a', { href: '#/stream/' + x.sid, class: 'sid mono', text: shortSid(x.sid) })),
        el('td', { class: 'mono', text: x.tool || '' }), el('td', { text: x.team || '' }),
        el('td', {}, x.recorded ? badge(x.recorded.action) : null, x.recorded && x.recorded.rule ? ' ' + x.recorded.rule : ''),
        el('td', {}, x.now ? badge(x.now.action) : null, x.now && x.now.rule ? ' ' + x.now.rule : ''))))) : null));
}

// --------------------------------------------------------------------------
// Pending: calls waiting for a person

function identityText(a) {
  const i = a.identity || {};
  const w = who(i.team, i.user);
  return w ? w + (i.key_id ? ' (' + i.key_id + ')' : '') : (i.key_id || 'anonymous');
}

function timeLeft(ms) {
  if (!ms) return '';
  const left = Math.round((ms - Date.now()) / 1000);
  if (left <= 0) return 'expiring';
  return left >= 60 ? Math.floor(left / 60) + ' min ' + (left % 60) + ' s left' : left + ' s left';
}

function argsText(args) {
  return typeof args === 'string' ? args : JSON.stringify(args, null, 2);
}

function viewPending() {
  clear();
  const waiting = el('div', { id: 'pending-list' });
  const decided = el('tbody', { id: 'decided-list' });
  const note = el('p', { class: 'error', id: 'pending-error' });
  $main.append(el('h1', { text: 'Pending' }),
    el('p', { class: 'muted', text: 'Tool calls a rule holds until a person decides. Keys: j / k to move, a to approve, d to deny, c to write a comment (Esc to leave it).' }),
    note,
    el('section', {}, el('h2', { text: 'Waiting' }), waiting),
    el('section', {}, el('h2', { text: 'Recently decided' }),
      el('table', {}, el('thead', {}, el('tr', {}, ['When', 'Tool', 'Outcome', 'Decided by', 'Comment', 'Whose call'].map((h) => el('th', { text: h })))), decided)));
  const items = new Map();              // id -> approval, pending ones
  let picked = null;                    // id of the selected card
  const cards = () => Array.from(waiting.querySelectorAll('.approval'));
  const empty = () => { if (!items.size && !waiting.querySelector('.empty')) waiting.append(el('div', { class: 'empty', text: 'Nothing waits for a decision.' })); };
  const pick = (id, focus) => {
    picked = id;
    for (const c of cards()) c.classList.toggle('picked', c.dataset.id === id);
    const card = id && waiting.querySelector('.approval[data-id="' + id + '"]');
    if (card && focus) card.focus();
  };
  const decide = async (id, approve) => {
    const a = items.get(id);
    const card = waiting.querySelector('.approval[data-id="' + id + '"]');
    if (!a || !card) return;
    card.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    const comment = card.querySelector('input.comment').value;
    try {
      await api('/api/approvals/' + id, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ decision: approve ? 'approve' : 'deny', comment: comment || undefined,
                               digest: a.digest, policy: a.policy }) });
      note.textContent = '';
    } catch (err) {
      note.textContent = 'Could not ' + (approve ? 'approve' : 'deny') + ' ' + a.tool + ': ' + err.message;
      card.querySelectorAll('button').forEach((b) => { b.disabled = false; });
    }
  };
  const card = (a) => el('div', { class: 'approval panel', tabindex: 0, 'data-id': a.id, 'data-created': a.created_at || '', onclick: () => pick(a.id, false) },
    el('div', { class: 'head row' }, el('span', { class: 'badge live', text: 'waiting' }), el('span', { class: 'tool', text: a.tool || '?' }),
      el('span', { class: 'muted small left', 'data-expires': a.expires_at || '', text: timeLeft(a.expires_at) })),
    a.message ? el('p', { class: 'message', text: a.message }) : null,
    el('div', { class: 'kv' },
      el('span', { class: 'k', text: 'Whose call' }), el('span', { text: identityText(a) }),
      el('span', { class: 'k', text: 'Model' }), el('span', { text: a.model || '' }),
      el('span', { class: 'k', text: 'Rule' }), el('span', { text: a.rule || '' }),
      el('span', { class: 'k', text: 'Asked' }), el('span', { text: a.created_at ? time(a.created_at) : '' }),
      a.last_user ? el('span', { class: 'k', text: 'Last user message' }) : null, a.last_user ? el('span', { text: a.last_user }) : null),
    el('pre', { class: 'args', text: argsText(a.arguments) }),
    el('div', { class: 'row decide' },
      el('input', { class: 'comment', type: 'text', placeholder: 'Comment (optional)', 'aria-label': 'Comment', maxLength: 4096 }),
      el('button', { class: 'approve', text: 'Approve', onclick: (e) => { e.stopPropagation(); decide(a.id, true); } }),
      el('button', { class: 'deny', text: 'Deny', onclick: (e) => { e.stopPropagation(); decide(a.id, false); } })));
  const addPending = (a) => {
    waiting.querySelectorAll('.empty').forEach((n) => n.remove());
    const old = waiting.querySelector('.approval[data-id="' + a.id + '"]');
    items.set(a.id, a);
    const c = card(a);
    if (old) old.replaceWith(c); else waiting.append(c);
    if (!picked) pick(a.id, false); else pick(picked, false);
  };
  const addDecided = (a) => {
    decided.querySelector('tr[data-id="' + a.id + '"]')?.remove();
    decided.prepend(el('tr', { 'data-id': a.id },
      el('td', { text: time(a.decided_at || a.created_at) }), el('td', { class: 'mono', text: a.tool || '' }),
      el('td', {}, el('span', { class: 'badge ' + ({ approved: 'allow', denied: 'block' }[a.state] || 'lost'), text: a.state })),
      el('td', {}, a.self_approved ? el('span', { class: 'badge self', title: 'decided by the caller whose call it held (the rule says allow_self)', text: 'self-approved' }) : null, a.approver || ''),
      el('td', { text: a.comment || '' }), el('td', { text: identityText(a) })));
    while (decided.children.length > 50) decided.lastChild.remove();
  };
  const settle = (a) => {
    if (a.state === 'pending') { addPending(a); return; }
    const held = items.get(a.id);
    items.delete(a.id);
    const c = waiting.querySelector('.approval[data-id="' + a.id + '"]');
    if (c) {
      const next = c.nextElementSibling || c.previousElementSibling;
      c.remove();
      if (picked === a.id) pick(next ? next.dataset.id : null, document.activeElement === document.body);
    }
    addDecided(Object.assign({}, held || {}, a));
    empty();
  };
  if (live) live.close();
  live = new EventSource('/api/live');
  live.addEventListener('approval', (e) => settle(JSON.parse(e.data)));
  api('/api/approvals?state=pending').then((r) => { r.approvals.forEach(addPending); empty(); })
    .catch((err) => { note.textContent = err.message; });
  api('/api/approvals?state=decided&limit=20').then((r) => r.approvals.slice().reverse().forEach(addDecided)).catch(() => {});
  pendingTimer = setInterval(() => waiting.querySelectorAll('[data-expires]').forEach((n) => { n.textContent = timeLeft(Number(n.dataset.expires)); }), 1000);
  pendingKeys = (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement;
    if (typing) {
      if (e.key === 'Escape') { e.target.blur(); pick(picked, true); }
      return;
    }
    const list = cards();
    const at = list.findIndex((c) => c.dataset.id === picked);
    if (e.key === 'j' || e.key === 'k') {
      if (!list.length) return;
      const to = e.key === 'j' ? Math.min(at + 1, list.length - 1) : Math.max(at - 1, 0);
      pick(list[to].dataset.id, true);
    } else if ((e.key === 'a' || e.key === 'd') && picked) {
      decide(picked, e.key === 'a');
    } else if (e.key === 'c' && picked) {
      waiting.querySelector('.approval[data-id="' + picked + '"] input.comment')?.focus();
    } else return;
    e.preventDefault();
  };
  document.addEventListener('keydown', pendingKeys);
}

// --------------------------------------------------------------------------
// Routing

function route() {
  const hash = location.hash || '#/live';
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const view = path.split('/')[1] || 'live';
  if (live) { live.close(); live = null; }
  if (pendingKeys) { document.removeEventListener('keydown', pendingKeys); pendingKeys = null; }
  if (pendingTimer) { clearInterval(pendingTimer); pendingTimer = null; }
  document.querySelectorAll('header nav a').forEach((a) => a.classList.toggle('on', a.dataset.view === (view === 'stream' ? 'history' : view)));
  if (view === 'history') viewHistory(params);
  else if (view === 'stream') viewStream(path.split('/')[2]);
  else if (view === 'charts') viewCharts(params);
  else if (view === 'usage') viewUsage(params);
  else if (view === 'policy') viewPolicy(params);
  else if (view === 'shadow') viewShadow(params);
  else if (view === 'tools') viewTools(params);
  else if (view === 'providers') viewProviders(params);
  else if (view === 'try') viewTry(params);
  else if (view === 'backtest') viewBacktest(params);
  else if (view === 'pending') viewPending();
  else if (view === 'chain') viewChain();
  else if (view === 'keys') viewKeys();
  else viewLive();
  refreshStatus();
}

window.addEventListener('hashchange', route);
setInterval(refreshStatus, 5000);
route();
