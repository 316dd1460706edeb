// The Anthropic SDK against a running sluice. Until the ingest decodes the
// Anthropic dialect, only what the gateway answers itself is tested here:
// its errors, in Anthropic's shape, as the SDK's error classes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

const client = new Anthropic({ baseURL: process.env.SLUICE_ANTHROPIC_BASE_URL, apiKey: 'sk-ant-sdk-test', maxRetries: 0, timeout: 20000 });

test('a refused request surfaces as BadRequestError with sluice\'s reason', async () => {
  const stream = client.messages.stream({ model: 'mock-text', messages: [{ role: 'user', content: 'hi' }] });
  await assert.rejects(stream.finalMessage(), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, `a BadRequestError, got ${err?.constructor?.name}`);
    assert.equal(err.status, 400);
    assert.equal(err.error?.error?.type, 'invalid_request_error');
    assert.match(err.message, /max_tokens/);
    return true;
  });
});
