// The emitter's OpenAI Chat and Responses renderings, read by the openai
// SDK's own stream helpers (chat.completions.stream, responses.stream).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { serve } from './serve.mjs';

const client = (url) => new OpenAI({ baseURL: url, apiKey: 'x', maxRetries: 0 });

test('chat: text, the call and usage reassemble exactly', async () => {
  const srv = await serve('openai-full.sse');
  try {
    const stream = client(srv.url).chat.completions.stream({ model: 'asked-model', messages: [{ role: 'user', content: 'hi' }] });
    const final = await stream.finalChatCompletion();
    const msg = final.choices[0].message;
    assert.equal(final.id, 'resp-id-1');
    assert.equal(msg.content, 'Paris is sunny "today".blocked run_shell');
    assert.equal(msg.tool_calls.length, 1);
    assert.equal(msg.tool_calls[0].id, 'call_w1');
    assert.equal(msg.tool_calls[0].function.name, 'get_weather');
    assert.equal(msg.tool_calls[0].function.arguments, '{"city":"Paris"}');
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.equal(final.usage.prompt_tokens, 40);
    assert.equal(final.usage.prompt_tokens_details.cached_tokens, 8);
    assert.equal(final.usage.completion_tokens_details.reasoning_tokens, 5);
  } finally {
    await srv.close();
  }
});

test('chat: an error mid-stream surfaces as APIError', async () => {
  const srv = await serve('openai-error.sse');
  try {
    const stream = client(srv.url).chat.completions.stream({ model: 'asked-model', messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(stream.finalChatCompletion(), (err) => err instanceof OpenAI.APIError && /upstream went away/.test(err.message));
  } finally {
    await srv.close();
  }
});

test('responses: every item reassembles exactly', async () => {
  const srv = await serve('responses-full.sse');
  try {
    const stream = client(srv.url).responses.stream({ model: 'asked-model', input: 'hi' });
    let text = '';
    let args = '';
    stream.on('response.output_text.delta', (e) => { text += e.delta; });
    stream.on('response.function_call_arguments.delta', (e) => { args += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(final.id, 'resp-id-1');
    assert.equal(final.status, 'completed');
    const outputText = final.output.filter((i) => i.type === 'message')
      .flatMap((i) => i.content).map((c) => c.text).join('');
    assert.equal(outputText, 'Paris is sunny "today".blocked run_shell');
    assert.equal(text, outputText, 'the deltas add up to the final text');
    assert.equal(args, '{"city":"Paris"}');
    assert.deepEqual(final.output.map((i) => i.type), ['reasoning', 'message', 'function_call', 'message']);
    assert.equal(final.output[0].encrypted_content, 'sig-abc');
    assert.equal(final.output[1].content[0].annotations[0].url, 'https://example.org');
    const call = final.output[2];
    assert.equal(call.call_id, 'call_w1');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{"city":"Paris"}');
    assert.equal(final.usage.input_tokens, 40);
    assert.equal(final.usage.output_tokens_details.reasoning_tokens, 5);
  } finally {
    await srv.close();
  }
});

test('responses: an error mid-stream surfaces as an error', async () => {
  const srv = await serve('responses-error.sse');
  try {
    const stream = client(srv.url).responses.stream({ model: 'asked-model', input: 'hi' });
    //  The SDK rejects with the error event itself, as it does for the
    //  provider's own error events.
    await assert.rejects(stream.finalResponse(), (err) => /upstream went away/.test(err?.message));
  } finally {
    await srv.close();
  }
});
