// The Google Gen AI SDK against a running sluice. Until the ingest decodes
// the Gemini dialect, only what the gateway answers itself is tested here:
// its errors, in Google's shape, as the SDK's error class.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, ApiError } from '@google/genai';

const ai = new GoogleGenAI({ apiKey: 'sdk-test-key', httpOptions: { baseUrl: process.env.SLUICE_GEMINI_BASE_URL } });

test('a refused request surfaces as ApiError with sluice\'s reason', async () => {
  await assert.rejects(
    (async () => {
      const stream = await ai.models.generateContentStream({
        model: 'mock-text', contents: 'hi', config: { candidateCount: 2 },
      });
      for await (const chunk of stream) void chunk;
    })(),
    (err) => {
      assert.ok(err instanceof ApiError, `an ApiError, got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.match(err.message, /candidateCount/);
      return true;
    });
});
