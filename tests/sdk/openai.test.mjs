// The OpenAI SDK against a running sluice: chat completions through the
// SDK's own stream helpers, with the mock upstream and the default policy
// (deploy/policy.yaml). SLUICE_OPENAI_BASE_URL points at the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

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
    'sluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).');
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
