// The official SDKs against a sluice whose keys have a limit of one
// request a minute: the second request of a minute is refused with a 429
// in the SDK's own dialect, and each SDK reports it as a rate limit (its
// own error class, the status, Retry-After). The keys come in
// SLUICE_LIMITED_KEYS (openai,responses,anthropic,gemini); a minute may
// roll over between two requests, so each SDK tries a few times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';

const [openaiKey, responsesKey, anthropicKey, geminiKey] = (process.env.SLUICE_LIMITED_KEYS || '').split(',');
const TRIES = 3;
const messages = [{ role: 'user', content: 'hi' }];

// Call until one call throws (at most TRIES pairs); the error.
async function refused (call) {
  for (let i = 0; i < 2 * TRIES; i++) {
    try {
      await call();
    } catch (error) {
      return error;
    }
  }
  assert.fail(`no call was refused in ${2 * TRIES}`);
}

test('openai chat completions: RateLimitError', async () => {
  const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: openaiKey, maxRetries: 0 });
  const error = await refused(async () => {
    const stream = await client.chat.completions.create({ model: 'mock-text', messages, stream: true });
    for await (const _ of stream);
  });
  assert.ok(error instanceof OpenAI.RateLimitError, `${error.constructor.name}: ${error.message}`);
  assert.equal(error.status, 429);
  assert.ok(Number(error.headers.get('retry-after')) >= 1);
  assert.match(error.message, /limit of 1 \(rpm\)/);
});

test('openai responses: RateLimitError', async () => {
  const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: responsesKey, maxRetries: 0 });
  const error = await refused(async () => {
    const stream = await client.responses.create({ model: 'mock-text', input: 'hi', stream: true });
    for await (const _ of stream);
  });
  assert.ok(error instanceof OpenAI.RateLimitError, `${error.constructor.name}: ${error.message}`);
  assert.equal(error.status, 429);
});

test('anthropic messages: RateLimitError', async () => {
  const client = new Anthropic({ baseURL: process.env.SLUICE_ANTHROPIC_BASE_URL, apiKey: anthropicKey, maxRetries: 0 });
  const error = await refused(() => client.messages.stream({ model: 'mock-text', max_tokens: 50, messages })
    .finalMessage());
  assert.ok(error instanceof Anthropic.RateLimitError, `${error.constructor.name}: ${error.message}`);
  assert.equal(error.status, 429);
  assert.equal(error.error?.error?.type, 'rate_limit_error');
  assert.ok(Number(error.headers.get('retry-after')) >= 1);
});

test('gemini generateContentStream: ApiError 429 RESOURCE_EXHAUSTED', async () => {
  const ai = new GoogleGenAI({ apiKey: geminiKey, httpOptions: { baseUrl: process.env.SLUICE_GEMINI_BASE_URL } });
  const error = await refused(async () => {
    const stream = await ai.models.generateContentStream({ model: 'mock-text', contents: 'hi' });
    for await (const _ of stream);
  });
  assert.ok(error instanceof ApiError, `${error.constructor.name}: ${error.message}`);
  assert.equal(error.status, 429);
  assert.match(error.message, /RESOURCE_EXHAUSTED/);
});
