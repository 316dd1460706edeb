/*  The console's Keys page (#/keys): client keys issued here, without
    editing a keys file (POST/GET /api/keys, rotate, revoke; see
    docs/identity.md). A new or rotated key is shown once, on this page,
    and kept nowhere. Loaded before app.js, whose helpers (el, api, time,
    clear) it calls when the page is drawn. */
'use strict';

function keysLimitsText(l) {
  if (!l) return '';
  const parts = [];
  for (const k of ['rpm', 'concurrent', 'tokens_per_day']) if (l[k]) parts.push(k + ' ' + l[k]);
  if (l.budget && l.budget.tokens) parts.push('budget ' + l.budget.tokens + ' tokens');
  if (l.budget && l.budget.usd) parts.push('budget $' + l.budget.usd);
  return parts.join(', ');
}

function keysShown(out, title, answer) {
  out.replaceChildren(el('div', { class: 'panel' },
    el('p', {}, el('strong', { text: title + ': ' }), el('span', { class: 'mono', text: answer.id })),
    el('p', { class: 'muted', text: 'The key, shown this once (the store keeps its SHA-256 only):' }),
    el('pre', { class: 'mono', text: answer.key }),
    answer.grace_until ? el('p', { class: 'muted', text: 'The old key works until ' + time(answer.grace_until, true) + '.' }) : null));
}

async function viewKeys() {
  clear();
  $main.append(el('h1', { text: 'Keys' }),
    el('p', { class: 'muted', text: 'Client keys issued by this console. The gateways fetch the keys in force every --watch-ms and merge them with their keys file, whose keys are listed below and change in the file only.' }));
  const shown = el('div', {});
  const team = el('input', { placeholder: 'team', required: true });
  const user = el('input', { placeholder: 'user', required: true });
  const models = el('input', { placeholder: 'models (globs, comma-separated; none: the team\'s)' });
  const rpm = el('input', { placeholder: 'requests a minute', type: 'number', min: 0 });
  const approver = el('input', { type: 'checkbox' });
  const why = el('p', { class: 'error' });
  const form = el('form', { class: 'panel', onsubmit: async (ev) => {
    ev.preventDefault();
    why.textContent = '';
    const body = { team: team.value.trim(), user: user.value.trim(), approver: approver.checked };
    const globs = models.value.split(',').map((s) => s.trim()).filter((s) => s);
    if (globs.length) body.models = globs;
    if (rpm.value) body.limits = { rpm: Number(rpm.value) };
    try {
      const answer = await api('/api/keys', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      await drawList();
      keysShown(shown, 'Created', answer);
    } catch (e) { why.textContent = e.message; }
  } }, el('div', { class: 'row' }, team, user, models, rpm, el('label', {}, approver, ' approver'),
        el('button', { type: 'submit', text: 'Create a key' })), why);
  const list = el('div', {});
  const fileList = el('div', {});
  async function drawList() {
    let data;
    try { data = await api('/api/keys'); } catch (e) { list.replaceChildren(el('p', { class: 'error', text: e.message })); return; }
    fileList.replaceChildren((data.file || []).length
      ? el('table', {}, el('thead', {}, el('tr', {}, ['Id', 'Team / user', 'Models', 'Limits', 'Approver'].map((h) => el('th', { text: h })))),
          el('tbody', {}, data.file.map((k) => el('tr', {}, el('td', { class: 'mono', text: k.id }), el('td', { text: who(k.team, k.user) }),
            el('td', { text: k.models ? k.models.join(', ') : '(the team\'s)' }), el('td', { text: keysLimitsText(k.limits) }),
            el('td', { text: k.approver ? 'yes' : '' })))))
      : el('p', { class: 'muted', text: 'No keys file given to sluice-audit (--keys-file), or none in it.' }));
    if (!data.keys.length) { list.replaceChildren(el('p', { class: 'empty', text: 'No key was issued here yet.' })); return; }
    list.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ['Id', 'Team / user', 'Models', 'Limits', 'Approver', 'Created', 'State', ''].map((h) => el('th', { text: h })))),
      el('tbody', {}, data.keys.map((k) => el('tr', {},
        el('td', { class: 'mono', text: k.id }), el('td', { text: who(k.team, k.user) }),
        el('td', { text: k.models ? k.models.join(', ') : '(the team\'s)' }), el('td', { text: keysLimitsText(k.limits) }),
        el('td', { text: k.approver ? 'yes' : '' }), el('td', { text: time(k.created_at, true) + (k.created_by ? ' · ' + k.created_by : '') }),
        el('td', { text: k.state === 'revoked' ? 'revoked ' + time(k.revoked_at, true)
                         : (k.grace_until ? 'rotated; the old key until ' + time(k.grace_until, true) : 'active') }),
        el('td', {}, k.state === 'revoked' ? null : [
          el('button', { text: 'Rotate', onclick: async () => {
            try {
              const answer = await api('/api/keys/' + encodeURIComponent(k.id) + '/rotate', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
              await drawList();
              keysShown(shown, 'Rotated', answer);
            } catch (e) { why.textContent = e.message; }
          } }),
          el('button', { text: 'Revoke', onclick: async () => {
            if (!confirm('Revoke ' + k.id + '? Every gateway refuses it from its next fetch.')) return;
            try { await api('/api/keys/' + encodeURIComponent(k.id), { method: 'DELETE' }); await drawList(); } catch (e) { why.textContent = e.message; }
          } })]))))));
  }
  $main.append(form, shown, el('h2', { text: 'Issued here' }), list,
    el('h2', { text: 'In the keys file (read-only: they change in the file)' }), fileList);
  await drawList();
}
