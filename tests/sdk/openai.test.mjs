// The OpenAI SDK against a running sluice: chat completions through the
// SDK's own stream helpers and without streaming, with the mock upstream
// and the default policy (deploy/policy.yaml); recorded provider streams;
// the models list. SLUICE_OPENAI_BASE_URL points at the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { replayModel, serveRecording, skipRecorded } from './recorded.mjs';
import { HELD_COMMAND, HELD_TEXT_COMMAND, TERMINATED, UPSTREAM_FAILED, beforeFirstEvent, capturing, keepAlives }
  from './held.mjs';
import { AGENT_TEXT, CALL_ID, DONE, MOCK_TEXT, MOCK_USAGE, NOTICE, SHELL_COMMAND, TEXT, TOOL_OUTPUT, UPSTREAMS, at }
  from './crossing.mjs';

const baseURL = process.env.SLUICE_OPENAI_BASE_URL;
const client = new OpenAI({ baseURL, apiKey: 'sk-sdk-test', maxRetries: 0, timeout: 20000 });
const ask = [{ role: 'user', content: 'What is the weather in Paris? Then tidy up.' }];
const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'run_shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
];

test('mock-tools: text exact, get_weather exact, the blocked call arrives as the notice', async () => {
  const stream = client.chat.completions.stream({ model: 'mock-tools', messages: ask, tools });
  const deltas = [];
  stream.on('content.delta', ({ delta }) => deltas.push(delta));
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.content,
    'Let me check the weather and tidy up.' +
    '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).');
  assert.ok(deltas.length >= 3, `the text streamed in pieces (${deltas.length})`);
  assert.equal(choice.message.tool_calls.length, 1, 'only the allowed call reaches the client');
  const call = choice.message.tool_calls[0];
  assert.equal(call.id, 'call_weather_1');
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(call.function.arguments, '{"city":"Paris"}');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  assert.equal(choice.finish_reason, 'tool_calls', 'a call remains, so the client runs it');
  assert.ok(!JSON.stringify(final).includes('rm -rf'), 'the blocked arguments never arrive');
});

test('mock-text: the whole text, and usage when asked for', async () => {
  const stream = client.chat.completions.stream({
    model: 'mock-text', messages: ask, stream_options: { include_usage: true },
  });
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].message.content,
    'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at a time, ' +
    'so you can watch the proxy work.');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.model, 'mock-text');
  assert.equal(final.usage.prompt_tokens, 12);
  assert.equal(final.usage.completion_tokens, 30);
  assert.equal(await stream.finalContent(), final.choices[0].message.content);
});

test('mock-text with create({stream: true}): the raw chunks', async () => {
  const stream = await client.chat.completions.create({ model: 'mock-text', messages: ask, stream: true });
  let text = '';
  let finishes = 0;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.choices[0]?.finish_reason) finishes++;
  }
  assert.ok(text.startsWith('Hello! This is the mock upstream'));
  assert.equal(finishes, 1);
});

test('mock-error: a failure mid-stream surfaces as the SDK\'s APIError', async () => {
  const stream = client.chat.completions.stream({ model: 'mock-error', messages: ask });
  let text = '';
  stream.on('content.delta', ({ delta }) => { text += delta; });
  await assert.rejects(stream.finalChatCompletion(), (err) => {
    assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err?.constructor?.name}`);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
  assert.equal(text, 'This answer will not', 'what came before the error was delivered');
});

test('errors before the stream: the SDK\'s own error classes', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: ask, stream: true }),
    (err) => err instanceof OpenAI.NotFoundError && /does not exist/.test(err.message));
  await assert.rejects(
    client.chat.completions.create({ model: 'mock-text', messages: ask, stream: true, n: 2 }),
    (err) => err instanceof OpenAI.BadRequestError && /'n'/.test(err.message));
});

test('mock-tools through create() without streaming: the same completion in one body', async () => {
  const once = await client.chat.completions.create({ model: 'mock-tools', messages: ask, tools });
  assert.equal(once.object, 'chat.completion');
  const choice = once.choices[0];
  assert.equal(choice.message.content,
    'Let me check the weather and tidy up.' +
    '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).');
  assert.equal(choice.message.tool_calls.length, 1, 'only the allowed call reaches the client');
  assert.equal(choice.message.tool_calls[0].id, 'call_weather_1');
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.equal(choice.message.tool_calls[0].function.arguments, '{"city":"Paris"}');
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.ok(!JSON.stringify(once).includes('rm -rf'), 'the blocked arguments never arrive');
  assert.equal(once.usage.prompt_tokens, 40, 'a whole completion always has its usage');
  const streamed = await client.chat.completions.stream({ model: 'mock-tools', messages: ask, tools,
    stream_options: { include_usage: true } }).finalChatCompletion();
  assert.deepEqual(shape(once), shape(streamed));
});

test('mock-text and mock-error without streaming', async () => {
  const once = await client.chat.completions.create({ model: 'mock-text', messages: ask });
  assert.equal(once.choices[0].message.content,
    'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at a time, ' +
    'so you can watch the proxy work.');
  assert.equal(once.choices[0].finish_reason, 'stop');
  await assert.rejects(client.chat.completions.create({ model: 'mock-error', messages: ask }), (err) => {
    assert.ok(err instanceof OpenAI.InternalServerError, `an InternalServerError, got ${err?.constructor?.name}`);
    assert.equal(err.status, 500);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
});

test('models.list(): the models routing offers', async () => {
  const ids = [];
  for await (const model of client.models.list())
    ids.push(model.id);
  assert.ok(ids.includes('mock-tools') && ids.includes('mock-text'), `listed: ${ids}`);
  assert.equal((await client.models.retrieve('mock-text')).id, 'mock-text');
});

// What a client can see of a completion.
function shape (completion) {
  const choice = completion.choices[0];
  return {
    content: choice.message.content ?? null,
    refusal: choice.message.refusal ?? null,
    tool_calls: (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name,
      arguments: c.function.arguments })),
    finish_reason: choice.finish_reason,
    usage: completion.usage ? { prompt_tokens: completion.usage.prompt_tokens,
      completion_tokens: completion.usage.completion_tokens,
      cached_tokens: completion.usage.prompt_tokens_details?.cached_tokens ?? 0,
      reasoning_tokens: completion.usage.completion_tokens_details?.reasoning_tokens ?? 0 } : null,
  };
}

// Not here: openai-compat-anthropic-text-then-tool-call-index1.sse (the
// SDK cannot read a first call at index 1; sluice numbers it 0);
// openai-chat-gpt5-text-usage-then-moderation-chunk.sse (the SDK loses the
// usage to the chunk after it; sluice keeps it); several choices (refused
// by the gateway); errors (mock-error covers them).
const recordings = [
  'openai-chat/openai-chat-text-usage.sse',
  'openai-chat/openai-chat-single-tool-call.sse',
  'openai-chat/openai-chat-parallel-tool-calls.sse',
  'openai-chat/openai-chat-refusal.sse',
  'openai-chat/openai-chat-finish-length.sse',
  'openai-chat/openai-chat-tool-call-obfuscation-usage.sse',
  'openai-chat/openai-compat-deepseek-tool-call.chunks.jsonl',
];

for (const file of recordings) {
  test(`recorded ${file}: the same completion through sluice as straight from the provider`, { skip: skipRecorded },
    async () => {
      const srv = await serveRecording(file);
      let direct;
      try {
        const plain = new OpenAI({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
        direct = shape(await plain.chat.completions.stream({ model: 'recorded', messages: ask,
          stream_options: { include_usage: true } }).finalChatCompletion());
      } finally {
        await srv.close();
      }
      const request = { model: replayModel(file), messages: ask, stream_options: { include_usage: true } };
      assert.deepEqual(shape(await client.chat.completions.stream(request).finalChatCompletion()), direct,
        'streamed through sluice');
      const once = shape(await client.chat.completions.create({ model: replayModel(file), messages: ask }));
      if (!direct.usage)
        once.usage = null;              //  a whole completion has usage even when the stream had none
      assert.deepEqual(once, direct, 'in one body through sluice');
    });
}

// Calls the LLM judge holds (4.5 s), and responses ended mid-stream: what
// the coding agents on Chat Completions (opencode) read. See held.mjs.
const shell = [tools[1]];

for (const [model, command, first] of [['mock-agent-slow', HELD_COMMAND, true],
  ['mock-agent-slow-text', HELD_TEXT_COMMAND, false]]) {
  test(`${model}: keep-alive comments while the judge holds the call${first ? ' (the first block)' : ''}`, async () => {
    const { fetch, seen } = capturing();
    const held = new OpenAI({ baseURL, apiKey: 'sk-sdk-test', maxRetries: 0, timeout: 30000, fetch });
    const final = await held.chat.completions.stream({ model, messages: ask, tools: shell }).finalChatCompletion();
    await seen.done;
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'run_shell');
    assert.deepEqual(JSON.parse(call.function.arguments), { command }, 'the judge allowed it, whole');
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    if (first)
      assert.ok(keepAlives(beforeFirstEvent(seen.bytes)) > 0, `keep-alives before the first event:\n${seen.bytes}`);
    else
      assert.ok(keepAlives(seen.bytes.slice(seen.bytes.indexOf('shell command.'))) > 0,
        `keep-alives after the text:\n${seen.bytes}`);
  });
}

test('mock-agent-error and mock-agent-terminate: APIError with the message, after the text', async () => {
  for (const [model, message] of [['mock-agent-error', UPSTREAM_FAILED], ['mock-agent-terminate', TERMINATED]]) {
    const stream = client.chat.completions.stream({ model, messages: ask, tools: shell });
    let text = '';
    stream.on('content.delta', ({ delta }) => { text += delta; });
    await assert.rejects(stream.finalChatCompletion(), (err) => {
      assert.ok(err instanceof OpenAI.APIError, `${model}: an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, message instanceof RegExp ? message : new RegExp(message.replace(/[().]/g, '\\$&')));
      return true;
    });
    assert.ok(text.length > 0, `${model}: the text before the failure was delivered`);
  }
});

// Every upstream dialect (crossing.mjs): the same client, translated.
for (const upstream of UPSTREAMS) {
  test(`to a ${upstream} upstream: mock-text streamed and in one body, with usage`, async () => {
    const model = at('mock-text', upstream);
    const streamed = await client.chat.completions.stream({ model, messages: ask,
      stream_options: { include_usage: true } }).finalChatCompletion();
    const once = await client.chat.completions.create({ model, messages: ask });
    for (const completion of [streamed, once]) {
      assert.equal(completion.choices[0].message.content, MOCK_TEXT);
      assert.equal(completion.choices[0].finish_reason, 'stop');
      assert.equal(completion.usage.prompt_tokens, MOCK_USAGE.input);
      assert.equal(completion.usage.completion_tokens, MOCK_USAGE.output);
    }
  });

  test(`to a ${upstream} upstream: mock-tools, the allowed call with an id to answer, the notice`, async () => {
    const model = at('mock-tools', upstream);
    const streamed = await client.chat.completions.stream({ model, messages: ask, tools }).finalChatCompletion();
    const once = await client.chat.completions.create({ model, messages: ask, tools });
    for (const completion of [streamed, once]) {
      const choice = completion.choices[0];
      assert.equal(choice.message.content, TEXT + NOTICE);
      assert.equal(choice.message.tool_calls.length, 1, 'only the allowed call reaches the client');
      const call = choice.message.tool_calls[0];
      assert.match(call.id, CALL_ID);
      assert.equal(call.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
      assert.equal(choice.finish_reason, 'tool_calls', 'a call remains, so the client runs it');
      assert.ok(!JSON.stringify(completion).includes('rm -rf'), 'the blocked arguments never arrive');
    }
  });

  test(`to a ${upstream} upstream: mock-error as the SDK's APIError, streamed and not`, async () => {
    const model = at('mock-error', upstream);
    const stream = client.chat.completions.stream({ model, messages: ask });
    let text = '';
    stream.on('content.delta', ({ delta }) => { text += delta; });
    await assert.rejects(stream.finalChatCompletion(), (err) => {
      assert.ok(err instanceof OpenAI.APIError, `an APIError, got ${err?.constructor?.name}`);
      assert.match(err.message, UPSTREAM_FAILED);
      return true;
    });
    assert.equal(text, 'This answer will not', 'what came before the error was delivered');
    await assert.rejects(client.chat.completions.create({ model, messages: ask }),
      (err) => err instanceof OpenAI.APIError && UPSTREAM_FAILED.test(err.message));
  });

  test(`to a ${upstream} upstream: two turns, the tool result goes back translated`, async () => {
    const model = at('mock-agent-shell', upstream);
    const first = await client.chat.completions.stream({ model, messages: ask, tools: shell }).finalChatCompletion();
    const message = first.choices[0].message;
    assert.equal(message.content, AGENT_TEXT);
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    const call = message.tool_calls[0];
    assert.equal(call.function.name, 'run_shell');
    assert.deepEqual(JSON.parse(call.function.arguments), { command: SHELL_COMMAND });
    const history = [...ask, { role: 'assistant', content: message.content, tool_calls: message.tool_calls },
      { role: 'tool', tool_call_id: call.id, content: TOOL_OUTPUT }];
    const second = await client.chat.completions.create({ model, messages: history, tools: shell });
    assert.equal(second.choices[0].message.content, DONE, 'the upstream read the result as its call\'s');
    assert.equal(second.choices[0].finish_reason, 'stop');
    const streamed = await client.chat.completions.stream({ model, messages: history, tools: shell })
      .finalChatCompletion();
    assert.equal(streamed.choices[0].message.content, DONE);
  });
}

test('what cannot cross: JSON output without a schema to an Anthropic upstream is a 400 naming it', async () => {
  await assert.rejects(client.chat.completions.create({ model: at('mock-text', 'anthropic'), messages: ask,
    response_format: { type: 'json_object' } }),
  (err) => err instanceof OpenAI.BadRequestError && /JSON output without a schema/.test(err.message)
    && /anthropic upstream/.test(err.message));
  // A JSON schema crosses: Messages' structured output (output_config.format).
  const schema = await client.chat.completions.create({ model: at('mock-text', 'anthropic'), messages: ask,
    response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } } });
  assert.equal(schema.choices[0].finish_reason, 'stop');
  await assert.rejects(client.chat.completions.create({ model: at('mock-text', 'gemini'), messages: [
    { role: 'user', content: [{ type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'https://example.invalid/cat.png' } }] }] }),
  (err) => err instanceof OpenAI.BadRequestError && /image by URL/.test(err.message));
});
