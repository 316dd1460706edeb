// A call the judge holds for a minute (SLUICE_HOLD_SECONDS): the official
// SDKs of every client dialect wait for it at once, each with its default
// settings (timeouts, retries), and each receives it whole, with
// keep-alives in its dialect's form while it waited. The stack is
// tests/integration/test_keepalive.c's: an LLM judge (the mock's, slow)
// over commands with "sluice-slow", the judge's default keep-alive
// interval. Each SDK gets a fetch that wraps the global one (held.mjs),
// which counts the requests: a retry after a timeout would be a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import { HELD_COMMAND, beforeFirstEvent, capturing, keepAlives } from '../held.mjs';

const MODEL = 'mock-agent-slow';        // the shell call first: the hold opens the response
const ASK = 'Tidy up.';
const schema = { type: 'object', properties: { command: { type: 'string' } } };

// A capturing fetch that counts its requests.
function counted () {
  const { fetch, seen } = capturing();
  seen.requests = 0;
  return { fetch: (url, init) => { seen.requests++; return fetch(url, init); }, seen };
}

async function openaiChat () {
  const { fetch, seen } = counted();
  const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', fetch });
  const final = await client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: ASK }],
    tools: [{ type: 'function', function: { name: 'run_shell', parameters: schema } }] }).finalChatCompletion();
  await seen.done;
  const calls = (final.choices[0].message.tool_calls || []).map((c) => [c.function.name, JSON.parse(c.function.arguments)]);
  return { name: 'openai chat', calls, finish: final.choices[0].finish_reason, want: 'tool_calls', seen,
    comments: true };
}

async function openaiResponses () {
  const { fetch, seen } = counted();
  const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', fetch });
  const final = await client.responses.stream({ model: MODEL, input: ASK,
    tools: [{ type: 'function', name: 'run_shell', parameters: schema }] }).finalResponse();
  await seen.done;
  const calls = final.output.filter((i) => i.type === 'function_call').map((c) => [c.name, JSON.parse(c.arguments)]);
  return { name: 'openai responses', calls, finish: final.status, want: 'completed', seen, comments: true };
}

async function anthropicMessages () {
  const { fetch, seen } = counted();
  const client = new Anthropic({ baseURL: process.env.SLUICE_ANTHROPIC_BASE_URL, apiKey: 'sk-sdk-test', fetch });
  const final = await client.messages.stream({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: ASK }],
    tools: [{ name: 'run_shell', input_schema: schema }] }).finalMessage();
  await seen.done;
  const calls = final.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]);
  return { name: 'anthropic', calls, finish: final.stop_reason, want: 'tool_use', seen, comments: true };
}

// @google/genai takes no fetch of its own: it calls the global one, which
// is the counting one for this request alone (the other SDKs were given
// theirs), put back once the request is out.
async function gemini () {
  const { fetch, seen } = counted();
  const ai = new GoogleGenAI({ apiKey: 'sdk-test-key', httpOptions: { baseUrl: process.env.SLUICE_GEMINI_BASE_URL } });
  const original = globalThis.fetch;
  globalThis.fetch = fetch;
  let stream;
  try {
    stream = await ai.models.generateContentStream({ model: MODEL, contents: ASK,
      config: { tools: [{ functionDeclarations: [{ name: 'run_shell', parameters: schema }] }] } });
  } finally {
    globalThis.fetch = original;
  }
  const calls = [];
  let finish;
  for await (const chunk of stream) {
    for (const c of chunk.functionCalls || [])
      calls.push([c.name, c.args]);
    finish = chunk.candidates?.[0]?.finishReason || finish;
  }
  await seen.done;
  return { name: 'gemini', calls, finish, want: 'STOP', seen, comments: false };
}

test(`every SDK waits for a call held ${process.env.SLUICE_HOLD_SECONDS} s and receives it`, async () => {
  // Gemini last: the others' fetches wrap the global one as it was (each
  // call runs up to its first await before the next starts).
  const runs = [openaiChat(), openaiResponses(), anthropicMessages(), gemini()];
  const results = await Promise.allSettled(runs);
  for (const r of results)
    assert.equal(r.status, 'fulfilled', `no SDK failed or timed out: ${r.reason?.stack || r.reason}`);
  for (const { value: r } of results) {
    assert.deepEqual(r.calls, [['run_shell', { command: HELD_COMMAND }]], `${r.name}: the held call, whole`);
    assert.equal(r.finish, r.want, `${r.name}: a finish that says a call is left`);
    assert.equal(r.seen.requests, 1, `${r.name}: one request, no retry`);
    const before = beforeFirstEvent(r.seen.bytes);
    if (r.comments) {
      assert.ok(keepAlives(before) >= 2, `${r.name}: keep-alive comments while it waited:\n${before}`);
      assert.equal(before.replace(/: keep-alive\n\n/g, ''), '', `${r.name}: nothing else before the call`);
    } else
      assert.match(before, /^\n\n+$/, `${r.name}: line ends only while it waited (no comment, no data)`);
  }
});
