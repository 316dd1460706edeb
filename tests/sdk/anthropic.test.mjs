// The Anthropic SDK against a running sluice (the mock upstream, the
// default policy deploy/policy.yaml): messages.stream() / finalMessage()
// and messages.create() without streaming for each mock scenario,
// recorded streams with thinking and server tools, the models list, and
// errors as the SDK's own classes. SLUICE_ANTHROPIC_BASE_URL points at
// the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { replayModel, serveRecording, skipRecorded } from './recorded.mjs';
import { HELD_COMMAND, HELD_TEXT_COMMAND, TERMINATED, UPSTREAM_FAILED, beforeFirstEvent, capturing, keepAlives }
  from './held.mjs';
import { AGENT_TEXT, CALL_ID, DONE, MOCK_USAGE, SHELL_COMMAND, TOOL_OUTPUT, UPSTREAMS, at } from './crossing.mjs';

const baseURL = process.env.SLUICE_ANTHROPIC_BASE_URL;
const client = new Anthropic({ baseURL, apiKey: 'sk-ant-sdk-test', maxRetries: 0, timeout: 20000 });
const messages = [{ role: 'user', content: 'What is the weather in Paris? Then tidy up.' }];
const tools = [
  { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
  { name: 'run_shell', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
];
const ask = (model) => ({ model, max_tokens: 256, messages, tools });
const TEXT = 'Let me check the weather and tidy up.';
const NOTICE = '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).';
const MOCK_TEXT = 'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at a time, ' +
  'so you can watch the proxy work.';

function checkTools (msg) {
  assert.deepEqual(msg.content.map((b) => b.type), ['text', 'text', 'tool_use']);
  assert.equal(msg.content[0].text, TEXT);
  assert.equal(msg.content[1].text, NOTICE, 'the blocked call arrives as the notice, before the call left');
  const call = msg.content[2];
  assert.equal(call.id, 'toolu_weather_1');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(call.input, { city: 'Paris' });
  assert.equal(msg.stop_reason, 'tool_use', 'a call is left, so the client runs it');
  assert.ok(!JSON.stringify(msg).includes('rm -rf'), 'the blocked arguments never arrive');
}

test('mock-tools through messages.stream(): the text, the call and the notice exactly', async () => {
  const stream = client.messages.stream(ask('mock-tools'));
  let text = '';
  let input = '';
  stream.on('text', (delta) => { text += delta; });
  stream.on('inputJson', (delta) => { input += delta; });
  const msg = await stream.finalMessage();
  checkTools(msg);
  assert.equal(text, TEXT + NOTICE, 'the text as it streamed');
  assert.equal(input, '{"city":"Paris"}', 'the call\'s input as it streamed');
  assert.equal(msg.model, 'mock-tools');
});

test('mock-tools through messages.create(): the same message in one body', async () => {
  const msg = await client.messages.create(ask('mock-tools'));
  checkTools(msg);
  const streamed = await client.messages.stream(ask('mock-tools')).finalMessage();
  assert.equal(msg.id, streamed.id);
  assert.deepEqual(msg.content, streamed.content);
  assert.equal(msg.usage.input_tokens, streamed.usage.input_tokens);
  assert.equal(msg.usage.output_tokens, streamed.usage.output_tokens);
});

test('mock-text: the whole text, streamed and in one body', async () => {
  const streamed = await client.messages.stream(ask('mock-text')).finalMessage();
  const once = await client.messages.create(ask('mock-text'));
  for (const msg of [streamed, once]) {
    assert.deepEqual(msg.content.map((b) => b.type), ['text']);
    assert.equal(msg.content[0].text, MOCK_TEXT);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.ok(msg.usage.output_tokens > 0, 'usage');
  }
  assert.deepEqual(once.usage, { input_tokens: streamed.usage.input_tokens, output_tokens: streamed.usage.output_tokens });
});

test('mock-error: a failure surfaces as the SDK\'s error, streamed and not', async () => {
  const stream = client.messages.stream(ask('mock-error'));
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  await assert.rejects(stream.finalMessage(), (err) => {
    assert.ok(err instanceof Anthropic.APIError, `an APIError, got ${err?.constructor?.name}`);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
  assert.equal(text, 'This answer will not', 'what came before the error was delivered');
  await assert.rejects(client.messages.create(ask('mock-error')), (err) => {
    assert.ok(err instanceof Anthropic.APIError, `an APIError, got ${err?.constructor?.name}`);
    assert.equal(err.status, 529, 'the upstream\'s overloaded status, before any byte');
    assert.equal(err.error?.error?.type, 'overloaded_error');
    return true;
  });
});

test('a refused request surfaces as BadRequestError with sluice\'s reason', async () => {
  const stream = client.messages.stream({ model: 'mock-text', messages });
  await assert.rejects(stream.finalMessage(), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, `a BadRequestError, got ${err?.constructor?.name}`);
    assert.equal(err.status, 400);
    assert.equal(err.error?.error?.type, 'invalid_request_error');
    assert.match(err.message, /max_tokens/);
    return true;
  });
  await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 10, messages }),
    (err) => err instanceof Anthropic.NotFoundError);
});

test('models.list(): the models routing offers', async () => {
  const ids = [];
  for await (const model of client.models.list())
    ids.push(model.id);
  assert.ok(ids.includes('mock-tools'), `listed: ${ids}`);
  assert.equal((await client.models.retrieve('mock-tools')).id, 'mock-tools');
});

// What a client can see of a message, block by block.
function shape (msg) {
  const block = (b) => {
    switch (b.type) {
      case 'text': return { type: b.type, text: b.text, citations: (b.citations ?? []).length };
      case 'thinking': return { type: b.type, thinking: b.thinking, signature: b.signature };
      case 'redacted_thinking': return { type: b.type, data: b.data };
      case 'tool_use':
      case 'server_tool_use': return { type: b.type, id: b.id, name: b.name, input: b.input };
      default: return { type: b.type, tool_use_id: b.tool_use_id, content: b.content };
    }
  };
  return {
    content: msg.content.map(block),
    stop_reason: msg.stop_reason,
    stop_sequence: msg.stop_sequence,
    usage: { input_tokens: msg.usage.input_tokens, output_tokens: msg.usage.output_tokens,
      cache_read_input_tokens: msg.usage.cache_read_input_tokens ?? 0,
      cache_creation_input_tokens: msg.usage.cache_creation_input_tokens ?? 0 },
  };
}

// Not here: anthropic-mcp-tool-use.sse, whose MCP tool use reaches the
// client as a server_tool_use without its server_name (the decoded block
// does not carry them).
const recordings = [
  'anthropic/anthropic-thinking-signature.sse',
  'anthropic/anthropic-redacted-thinking.sse',
  'anthropic/anthropic-thinking-then-tool-use.sse',
  'anthropic/anthropic-web-search-server-tool-thinking.sse',
  'anthropic/anthropic-stop-sequence.sse',
  'anthropic/anthropic-code-execution-server-tool.sse',
  'anthropic/anthropic-web-fetch-server-tool.sse',
  'anthropic/anthropic-parallel-tool-use-no-args.sse',
  'anthropic/anthropic-max-tokens-truncated-tool-input.sse',
  'anthropic/anthropic-text.chunks.jsonl',
  'anthropic/anthropic-refusal-stop-details.chunks.jsonl',
  'anthropic/anthropic-text-then-tool-use.sse',
];

// The usage message_start gave, as a client reads it when the answer
// starts (Claude Code counts its context from it).
function startUsage (stream) {
  const seen = {};
  stream.on('streamEvent', (event) => {
    if (event.type === 'message_start') {
      const u = event.message.usage;
      Object.assign(seen, { input_tokens: u.input_tokens, output_tokens: u.output_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
        cache_creation_input_tokens: u.cache_creation_input_tokens ?? 0 });
    }
  });
  return seen;
}

test('mock-text: message_start carries the upstream\'s input tokens, as the provider sent them', async () => {
  const stream = client.messages.stream({ ...ask('mock-text') });
  const start = startUsage(stream);
  const msg = await stream.finalMessage();
  assert.deepEqual(start, { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0 }, 'the mock\'s message_start usage');
  assert.equal(msg.usage.input_tokens, 12);
});

for (const file of recordings) {
  test(`recorded ${file}: the same message through sluice as straight from the provider`, { skip: skipRecorded },
    async () => {
      const srv = await serveRecording(file);
      let direct, directStart;
      try {
        const plain = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
        const straight = plain.messages.stream(ask('recorded'));
        directStart = startUsage(straight);
        direct = shape(await straight.finalMessage());
      } finally {
        await srv.close();
      }
      const stream = client.messages.stream(ask(replayModel(file)));
      const start = startUsage(stream);
      let thinking = '';
      stream.on('thinking', (delta) => { thinking += delta; });
      const streamed = shape(await stream.finalMessage());
      assert.deepEqual(streamed, direct, 'streamed through sluice');
      assert.deepEqual(start, directStart, 'the usage of message_start');
      assert.equal(thinking, direct.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join(''),
        'the thinking events');
      const once = shape(await client.messages.create(ask(replayModel(file))));
      assert.deepEqual(once, direct, 'in one body through sluice');
    });
}

// Calls the LLM judge holds (4.5 s), and responses ended mid-stream: what
// Claude Code reads. See held.mjs.
const shell = [tools[1]];

for (const [model, command, first] of [['mock-agent-slow', HELD_COMMAND, true],
  ['mock-agent-slow-text', HELD_TEXT_COMMAND, false]]) {
  test(`${model}: keep-alive comments while the judge holds the call${first ? ' (the first block)' : ''}`, async () => {
    const { fetch, seen } = capturing();
    const held = new Anthropic({ baseURL, apiKey: 'sk-ant-sdk-test', maxRetries: 0, timeout: 30000, fetch });
    const stream = held.messages.stream({ model, max_tokens: 256, messages, tools: shell });
    const start = startUsage(stream);
    const msg = await stream.finalMessage();
    await seen.done;
    const call = msg.content.find((b) => b.type === 'tool_use');
    assert.ok(call, 'the call reached the client');
    assert.equal(call.name, 'run_shell');
    assert.deepEqual(call.input, { command }, 'the judge allowed it, whole');
    assert.equal(msg.stop_reason, 'tool_use');
    assert.equal(start.input_tokens, 12, 'message_start has the input tokens, also after a hold');
    if (first)
      assert.ok(keepAlives(beforeFirstEvent(seen.bytes)) > 0, `keep-alives before the first event:\n${seen.bytes}`);
    else
      assert.ok(keepAlives(seen.bytes.slice(seen.bytes.indexOf('shell command.'))) > 0,
        `keep-alives after the text:\n${seen.bytes}`);
  });
}

test('mock-agent-error and mock-agent-terminate: APIError with the message, after the text', async () => {
  for (const [model, message] of [['mock-agent-error', UPSTREAM_FAILED], ['mock-agent-terminate', TERMINATED]]) {
    const stream = client.messages.stream({ model, max_tokens: 256, messages, tools: shell });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    await assert.rejects(stream.finalMessage(), (err) => {
      assert.ok(err instanceof Anthropic.APIError, `${model}: an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, message instanceof RegExp ? message : new RegExp(message.replace(/[().]/g, '\\$&')));
      return true;
    });
    assert.ok(text.length > 0, `${model}: the text before the failure was delivered`);
  }
});

// Every upstream dialect (crossing.mjs): the same client, translated.
for (const upstream of UPSTREAMS) {
  test(`to a ${upstream} upstream: mock-text streamed and in one body, with usage`, async () => {
    const request = { ...ask(at('mock-text', upstream)), tools: undefined };
    const streamed = await client.messages.stream(request).finalMessage();
    const once = await client.messages.create(request);
    for (const msg of [streamed, once]) {
      assert.deepEqual(msg.content.map((b) => b.type), ['text']);
      assert.equal(msg.content[0].text, MOCK_TEXT);
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.usage.input_tokens, MOCK_USAGE.input);
      assert.equal(msg.usage.output_tokens, MOCK_USAGE.output);
    }
  });

  test(`to a ${upstream} upstream: mock-tools, the notice before the allowed call, an id to answer`, async () => {
    const request = ask(at('mock-tools', upstream));
    const stream = client.messages.stream(request);
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    const streamed = await stream.finalMessage();
    const once = await client.messages.create(request);
    assert.equal(text, TEXT + NOTICE);
    for (const msg of [streamed, once]) {
      assert.deepEqual(msg.content.map((b) => b.type), ['text', 'text', 'tool_use']);
      assert.equal(msg.content[0].text, TEXT);
      assert.equal(msg.content[1].text, NOTICE);
      const call = msg.content[2];
      assert.match(call.id, CALL_ID);
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(call.input, { city: 'Paris' });
      assert.equal(msg.stop_reason, 'tool_use', 'a call is left, so the client runs it');
      assert.ok(!JSON.stringify(msg).includes('rm -rf'), 'the blocked arguments never arrive');
    }
  });

  test(`to a ${upstream} upstream: mock-error as the SDK's APIError, streamed and not`, async () => {
    const request = ask(at('mock-error', upstream));
    const stream = client.messages.stream(request);
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    await assert.rejects(stream.finalMessage(), (err) => {
      assert.ok(err instanceof Anthropic.APIError, `an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, UPSTREAM_FAILED);
      return true;
    });
    assert.equal(text, 'This answer will not', 'what came before the error was delivered');
    await assert.rejects(client.messages.create(request),
      (err) => err instanceof Anthropic.APIError && UPSTREAM_FAILED.test(err.message));
  });

  test(`to a ${upstream} upstream: two turns, the tool result goes back translated`, async () => {
    const model = at('mock-agent-shell', upstream);
    const first = await client.messages.stream({ model, max_tokens: 256, messages, tools: shell }).finalMessage();
    assert.deepEqual(first.content.map((b) => b.type), ['text', 'tool_use']);
    assert.equal(first.content[0].text, AGENT_TEXT);
    assert.equal(first.stop_reason, 'tool_use');
    const call = first.content[1];
    assert.match(call.id, CALL_ID);
    assert.equal(call.name, 'run_shell');
    assert.deepEqual(call.input, { command: SHELL_COMMAND });
    const history = [...messages, { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: TOOL_OUTPUT }] }];
    const second = await client.messages.create({ model, max_tokens: 256, messages: history, tools: shell });
    assert.deepEqual(second.content.map((b) => b.type), ['text']);
    assert.equal(second.content[0].text, DONE, 'the upstream read the result as its call\'s');
    assert.equal(second.stop_reason, 'end_turn');
    const streamed = await client.messages.stream({ model, max_tokens: 256, messages: history, tools: shell })
      .finalMessage();
    assert.equal(streamed.content[0].text, DONE);
  });
}

test('what cannot cross: stop sequences to a Responses upstream, a server tool anywhere, are a 400 naming them', async () => {
  await assert.rejects(client.messages.create({ model: at('mock-text', 'responses'), max_tokens: 64, messages,
    stop_sequences: ['END'] }),
  (err) => err instanceof Anthropic.BadRequestError && /stop sequences/.test(err.message));
  await assert.rejects(client.messages.create({ model: at('mock-text', 'openai'), max_tokens: 64, messages,
    tools: [{ type: 'web_search_20250305', name: 'web_search' }] }),
  (err) => err instanceof Anthropic.BadRequestError && /provider's own tool/.test(err.message));
});
