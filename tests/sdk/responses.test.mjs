// The OpenAI SDK's Responses API against a running sluice (the mock
// upstream, the default policy deploy/policy.yaml): responses.stream() /
// finalResponse() and responses.create() without streaming for each mock
// scenario, recorded streams with reasoning and server tools, and errors
// as the SDK's own classes. SLUICE_OPENAI_BASE_URL points at the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { replayModel, serveRecording, skipRecorded } from './recorded.mjs';
import { HELD_COMMAND, HELD_TEXT_COMMAND, TERMINATED, UPSTREAM_FAILED, beforeFirstEvent, capturing, keepAlives }
  from './held.mjs';
import { AGENT_TEXT, CALL_ID, DONE, MOCK_USAGE, SHELL_COMMAND, TOOL_OUTPUT, UPSTREAMS, at } from './crossing.mjs';

const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', maxRetries: 0,
  timeout: 20000 });
const input = 'What is the weather in Paris? Then tidy up.';
const tools = [
  { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  { type: 'function', name: 'run_shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
];
const ask = (model) => ({ model, input, tools });
const TEXT = 'Let me check the weather and tidy up.';
const NOTICE = '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).';
const MOCK_TEXT = 'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at a time, ' +
  'so you can watch the proxy work.';

// What a client can see of a response, item by item (ids sluice makes up
// for the judge's notices differ per request; the upstream's pass as sent).
function shape (response, { ids = true } = {}) {
  const item = (o) => {
    const id = ids ? { id: o.id } : {};
    switch (o.type) {
      case 'message':
        return { ...id, type: o.type, role: o.role, content: o.content.map((c) => c.type === 'output_text'
          ? { type: c.type, text: c.text, annotations: c.annotations } : { type: c.type, refusal: c.refusal }) };
      case 'reasoning':
        return { ...id, type: o.type, summary: (o.summary ?? []).map((s) => s.text).join(''),
          content: (o.content ?? []).map((c) => c.text).join(''), encrypted_content: o.encrypted_content ?? null };
      case 'function_call':
        return { ...id, type: o.type, call_id: o.call_id, name: o.name, arguments: o.arguments };
      default:
        return { ...id, type: o.type, action: o.action ?? null };
    }
  };
  return {
    status: response.status,
    output: response.output.map(item),
    usage: response.usage ? { input_tokens: response.usage.input_tokens, output_tokens: response.usage.output_tokens,
      cached_tokens: response.usage.input_tokens_details?.cached_tokens ?? 0,
      reasoning_tokens: response.usage.output_tokens_details?.reasoning_tokens ?? 0 } : null,
  };
}

function checkTools (response) {
  assert.equal(response.status, 'completed');
  assert.deepEqual(response.output.map((o) => o.type), ['message', 'function_call', 'message']);
  assert.equal(response.output[0].content[0].text, TEXT);
  const call = response.output[1];
  assert.equal(call.call_id, 'call_weather_1');
  assert.equal(call.name, 'get_weather');
  assert.equal(call.arguments, '{"city":"Paris"}');
  assert.equal(response.output[2].content[0].text, NOTICE, 'the blocked call arrives as the notice');
  assert.ok(!JSON.stringify(response).includes('rm -rf'), 'the blocked arguments never arrive');
}

test('mock-tools through responses.stream(): the text, the call and the notice exactly', async () => {
  const stream = client.responses.stream(ask('mock-tools'));
  let text = '';
  let args = '';
  stream.on('response.output_text.delta', (event) => { text += event.delta; });
  stream.on('response.function_call_arguments.delta', (event) => { args += event.delta; });
  const response = await stream.finalResponse();
  checkTools(response);
  assert.equal(text, TEXT + NOTICE, 'the text events');
  assert.equal(args, '{"city":"Paris"}', 'the arguments as they streamed');
});

test('mock-tools through responses.create(): the same response in one body', async () => {
  const response = await client.responses.create(ask('mock-tools'));
  checkTools(response);
  assert.equal(response.output_text, TEXT + NOTICE, 'the SDK\'s output_text');
  const streamed = await client.responses.stream(ask('mock-tools')).finalResponse();
  assert.deepEqual(shape(response, { ids: false }), shape(streamed, { ids: false }));
  assert.equal(response.id, streamed.id);
});

test('mock-text: the whole text, streamed and in one body', async () => {
  const streamed = await client.responses.stream(ask('mock-text')).finalResponse();
  const once = await client.responses.create(ask('mock-text'));
  for (const response of [streamed, once]) {
    assert.equal(response.status, 'completed');
    assert.deepEqual(response.output.map((o) => o.type), ['message']);
    assert.equal(response.output[0].content[0].text, MOCK_TEXT);
    assert.ok(response.usage.output_tokens > 0, 'usage');
  }
  assert.deepEqual(shape(once), shape(streamed));
});

test('mock-error: a failure surfaces as the SDK\'s error, streamed and not', async () => {
  const stream = client.responses.stream(ask('mock-error'));
  let text = '';
  stream.on('response.output_text.delta', (event) => { text += event.delta; });
  await assert.rejects(stream.finalResponse(), (err) => {
    assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err?.constructor?.name}`);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
  assert.equal(text, 'This answer will not', 'what came before the error was delivered');
  await assert.rejects(client.responses.create(ask('mock-error')), (err) => {
    assert.ok(err instanceof OpenAI.InternalServerError, `an InternalServerError, got ${err?.constructor?.name}`);
    assert.equal(err.status, 500);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
});

test('a refused request surfaces as BadRequestError with sluice\'s reason', async () => {
  await assert.rejects(
    client.responses.create({ model: 'mock-text', input: 'hi', stream: true, background: true }),
    (err) => err instanceof OpenAI.BadRequestError && /background/.test(err.message));
});

// Not here: responses-reasoning-summary-multi-function-calls.chunks.jsonl
// holds four responses in one recording (sluice serves the first, the SDK
// keeps the last); responses-error-then-failed.chunks.jsonl ends in an
// error (mock-error covers errors).
const recordings = [
  'openai-responses/responses-text.sse',
  'openai-responses/responses-function-call.sse',
  'openai-responses/responses-reasoning-encrypted-function-call-usage.sse',
  'openai-responses/responses-deepseek-reasoning-text-function-call.sse',
  'openai-responses/responses-openrouter-reasoning-text-comment.sse',
  'openai-responses/responses-web-search.sse',
  'openai-responses/responses-web-search-annotations.chunks.jsonl',
];

for (const file of recordings) {
  test(`recorded ${file}: the same response through sluice as straight from the provider`, { skip: skipRecorded },
    async () => {
      const srv = await serveRecording(file);
      let direct;
      try {
        // Each item as its output_item.done event gave it: what sluice
        // passes on (some providers list other ids or encrypted content
        // in response.completed than in the item's own events).
        const plain = new OpenAI({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
        const stream = plain.responses.stream(ask('recorded'));
        const done = [];
        stream.on('response.output_item.done', (event) => { done[event.output_index] = event.item; });
        const response = await stream.finalResponse();
        // A reasoning item with nothing in it (no summary, text or
        // encrypted content) makes no block in sluice and is not passed on.
        const empty = (o) => o.type === 'reasoning' && !o.encrypted_content && !(o.summary ?? []).length &&
          !(o.content ?? []).some((c) => c.text);
        direct = shape({ ...response, output: response.output.map((item, i) => done[i] ?? item).filter((o) => !empty(o)) });
      } finally {
        await srv.close();
      }
      const streamed = shape(await client.responses.stream(ask(replayModel(file))).finalResponse());
      assert.deepEqual(streamed, direct, 'streamed through sluice');
      const once = shape(await client.responses.create(ask(replayModel(file))));
      assert.deepEqual(once, direct, 'in one body through sluice');
    });
}

// Calls the LLM judge holds (4.5 s), and responses ended mid-stream: what
// Codex CLI reads. See held.mjs.
const shell = [tools[1]];

for (const [model, command, first] of [['mock-agent-slow', HELD_COMMAND, true],
  ['mock-agent-slow-text', HELD_TEXT_COMMAND, false]]) {
  test(`${model}: keep-alive comments while the judge holds the call${first ? ' (the first block)' : ''}`, async () => {
    const { fetch, seen } = capturing();
    const held = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', maxRetries: 0,
      timeout: 30000, fetch });
    const final = await held.responses.stream({ model, input, tools: shell }).finalResponse();
    await seen.done;
    const call = final.output.find((item) => item.type === 'function_call');
    assert.ok(call, 'the call reached the client');
    assert.equal(call.name, 'run_shell');
    assert.deepEqual(JSON.parse(call.arguments), { command }, 'the judge allowed it, whole');
    assert.equal(final.status, 'completed');
    if (first)
      assert.ok(keepAlives(beforeFirstEvent(seen.bytes)) > 0, `keep-alives before the first event:\n${seen.bytes}`);
    else
      assert.ok(keepAlives(seen.bytes.slice(seen.bytes.indexOf('output_text.done'))) > 0,
        `keep-alives after the text:\n${seen.bytes}`);
  });
}

// The data of the named events in the bytes.
const eventsNamed = (bytes, name) => bytes.split('\n\n').filter((e) => e.startsWith(`event: ${name}\n`))
  .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));

test('mock-agent-error and mock-agent-terminate: APIError, and response.failed with the message', async () => {
  for (const [model, message] of [['mock-agent-error', UPSTREAM_FAILED], ['mock-agent-terminate', TERMINATED]]) {
    const { fetch, seen } = capturing();
    const failing = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', maxRetries: 0,
      timeout: 30000, fetch });
    const stream = failing.responses.stream({ model, input, tools: shell });
    let text = '';
    stream.on('response.output_text.delta', (event) => { text += event.delta; });
    const pattern = message instanceof RegExp ? message : new RegExp(message.replace(/[().]/g, '\\$&'));
    await assert.rejects(stream.finalResponse(), (err) => {
      assert.ok(err instanceof OpenAI.APIError, `${model}: an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, pattern);
      return true;
    });
    await seen.done;
    assert.ok(text.length > 0, `${model}: the text before the failure was delivered`);
    // What Codex CLI waits for: the response, failed, with the error.
    const failed = eventsNamed(seen.bytes, 'response.failed');
    assert.equal(failed.length, 1, `${model}: response.failed ends the stream:\n${seen.bytes}`);
    assert.equal(failed[0].response.status, 'failed');
    assert.match(failed[0].response.error.message, pattern);
    assert.ok(seen.bytes.trimEnd().endsWith('}'), 'nothing after it');
    // The text it cut off is not a completed message.
    const done = eventsNamed(seen.bytes, 'response.output_item.done').filter((e) => e.item.type === 'message');
    if (model === 'mock-agent-error')
      assert.equal(done[0].item.status, 'incomplete', 'the cut-off text is incomplete');
  }
});

// Every upstream dialect (crossing.mjs): the same client, translated.
// The text of a response's messages (a streamed response has no
// output_text of its own).
const textOf = (response) => response.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

for (const upstream of UPSTREAMS) {
  test(`to a ${upstream} upstream: mock-text streamed and in one body, with usage`, async () => {
    const model = at('mock-text', upstream);
    const streamed = await client.responses.stream({ model, input }).finalResponse();
    const once = await client.responses.create({ model, input });
    for (const response of [streamed, once]) {
      assert.equal(response.status, 'completed');
      assert.equal(textOf(response), MOCK_TEXT);
      assert.equal(response.usage.input_tokens, MOCK_USAGE.input);
      assert.equal(response.usage.output_tokens, MOCK_USAGE.output);
    }
  });

  test(`to a ${upstream} upstream: mock-tools, the allowed call with a call_id to answer, the notice`, async () => {
    const request = ask(at('mock-tools', upstream));
    const streamed = await client.responses.stream(request).finalResponse();
    const once = await client.responses.create(request);
    for (const response of [streamed, once]) {
      assert.equal(response.status, 'completed');
      assert.deepEqual(response.output.map((o) => o.type), ['message', 'function_call', 'message']);
      assert.equal(response.output[0].content[0].text, TEXT);
      const call = response.output[1];
      assert.match(call.call_id, CALL_ID);
      assert.ok(call.id, 'the item has an id');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.equal(response.output[2].content[0].text, NOTICE);
      assert.ok(!JSON.stringify(response).includes('rm -rf'), 'the blocked arguments never arrive');
    }
  });

  test(`to a ${upstream} upstream: mock-error as the SDK's APIError, streamed and not`, async () => {
    const request = { model: at('mock-error', upstream), input };
    const stream = client.responses.stream(request);
    let text = '';
    stream.on('response.output_text.delta', (event) => { text += event.delta; });
    await assert.rejects(stream.finalResponse(), (err) => {
      assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, UPSTREAM_FAILED);
      return true;
    });
    assert.equal(text, 'This answer will not', 'what came before the error was delivered');
    await assert.rejects(client.responses.create(request),
      (err) => err instanceof OpenAI.APIError && UPSTREAM_FAILED.test(err.message));
  });

  test(`to a ${upstream} upstream: two turns, the tool result goes back translated`, async () => {
    const model = at('mock-agent-shell', upstream);
    const first = await client.responses.stream({ model, input, tools: shell }).finalResponse();
    assert.deepEqual(first.output.map((o) => o.type), ['message', 'function_call']);
    assert.equal(textOf(first), AGENT_TEXT);
    const call = first.output[1];
    assert.match(call.call_id, CALL_ID);
    assert.equal(call.name, 'run_shell');
    assert.deepEqual(JSON.parse(call.arguments), { command: SHELL_COMMAND });
    const history = [{ role: 'user', content: input }, ...first.output,
      { type: 'function_call_output', call_id: call.call_id, output: TOOL_OUTPUT }];
    const second = await client.responses.create({ model, input: history, tools: shell });
    assert.equal(second.status, 'completed');
    assert.equal(textOf(second), DONE, 'the upstream read the result as its call\'s');
    const streamed = await client.responses.stream({ model, input: history, tools: shell }).finalResponse();
    assert.equal(textOf(streamed), DONE);
  });
}

test('what cannot cross: previous_response_id to another dialect is a 400 naming it', async () => {
  await assert.rejects(client.responses.create({ model: at('mock-text', 'gemini'), input,
    previous_response_id: 'resp_123' }),
  (err) => err instanceof OpenAI.BadRequestError && /previous_response_id/.test(err.message));
});
