// The OpenAI SDK's Responses API against a running sluice. Until the
// ingest decodes the Responses dialect, only what the gateway answers
// itself is tested here: its errors, as the SDK's error classes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-sdk-test', maxRetries: 0, timeout: 20000 });

test('a refused request surfaces as BadRequestError with sluice\'s reason', async () => {
  await assert.rejects(
    client.responses.create({ model: 'mock-text', input: 'hi', stream: true, background: true }),
    (err) => err instanceof OpenAI.BadRequestError && /background/.test(err.message));
});
