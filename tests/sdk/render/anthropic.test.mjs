// The emitter's Anthropic rendering, read by @anthropic-ai/sdk's own
// stream helper (messages.stream / finalMessage).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { serve } from './serve.mjs';

const ask = { model: 'asked-model', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

test('every block kind reassembles exactly', async () => {
  const srv = await serve('anthropic-full.sse');
  try {
    const client = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const stream = client.messages.stream(ask);
    let thinking = '';
    stream.on('thinking', (delta) => { thinking += delta; });
    const msg = await stream.finalMessage();
    assert.equal(msg.id, 'resp-id-1');
    assert.equal(msg.model, 'real-model');
    assert.deepEqual(msg.content.map((b) => b.type), ['thinking', 'text', 'text', 'tool_use']);
    assert.equal(msg.content[0].thinking, 'Let me think.');
    assert.equal(thinking, 'Let me think.');
    assert.equal(msg.content[0].signature, 'sig-abc');
    assert.equal(msg.content[1].text, 'Paris is sunny "today".');
    assert.deepEqual(msg.content[1].citations, [{ type: 'url_citation', url: 'https://example.org' }]);
    assert.equal(msg.content[2].text, 'blocked run_shell', 'the notice comes before the call');
    assert.equal(msg.content[3].id, 'call_w1');
    assert.equal(msg.content[3].name, 'get_weather');
    assert.deepEqual(msg.content[3].input, { city: 'Paris' });
    assert.equal(msg.stop_reason, 'tool_use');
    assert.equal(msg.usage.input_tokens, 40);
    assert.equal(msg.usage.output_tokens, 25);
    assert.equal(msg.usage.cache_read_input_tokens, 8);
    assert.equal(msg.usage.cache_creation_input_tokens, 3);
  } finally {
    await srv.close();
  }
});

test('server tools, redacted thinking and a stop sequence reassemble exactly', async () => {
  const srv = await serve('anthropic-server.sse');
  try {
    const client = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const msg = await client.messages.stream(ask).finalMessage();
    assert.deepEqual(msg.content.map((b) => b.type),
      ['redacted_thinking', 'server_tool_use', 'web_search_tool_result', 'text']);
    assert.equal(msg.content[0].data, 'opaque==');
    assert.equal(msg.content[1].id, 'srvtoolu_1');
    assert.equal(msg.content[1].name, 'web_search');
    assert.deepEqual(msg.content[1].input, { query: 'x' });
    assert.equal(msg.content[2].tool_use_id, 'srvtoolu_1');
    assert.equal(msg.content[2].content[0].url, 'https://example.org');
    assert.equal(msg.content[3].text, 'done');
    assert.equal(msg.stop_reason, 'stop_sequence');
    assert.equal(msg.stop_sequence, 'STOP!');
  } finally {
    await srv.close();
  }
});

test('an error mid-stream surfaces as the SDK\'s APIError', async () => {
  const srv = await serve('anthropic-error.sse');
  try {
    const client = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const stream = client.messages.stream(ask);
    await assert.rejects(stream.finalMessage(), (err) => {
      assert.ok(err instanceof Anthropic.APIError, `an APIError, got ${err?.constructor?.name}: ${err}`);
      assert.match(err.message, /upstream went away/);
      return true;
    });
  } finally {
    await srv.close();
  }
});
