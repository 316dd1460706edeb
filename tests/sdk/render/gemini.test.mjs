// The emitter's Gemini rendering, read by @google/genai's own stream
// (models.generateContentStream).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, ApiError } from '@google/genai';
import { serve } from './serve.mjs';

test('text, thoughts, the call, citations and usage come through', async () => {
  const srv = await serve('gemini-full.sse');
  try {
    const ai = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: srv.url } });
    const stream = await ai.models.generateContentStream({ model: 'asked-model', contents: 'hi' });
    let text = '';
    let thought = '';
    let signature = null;
    const calls = [];
    let citations = 0;
    let last = null;
    for await (const chunk of stream) {
      for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
        if (typeof part.text === 'string') {
          if (part.thought) thought += part.text;
          else text += part.text;
        }
        if (part.thoughtSignature) signature = part.thoughtSignature;
      }
      calls.push(...(chunk.functionCalls ?? []));
      citations += chunk.candidates?.[0]?.citationMetadata?.citations?.length ?? 0;
      last = chunk;
    }
    assert.equal(text, 'Paris is sunny "today".blocked run_shell');
    assert.equal(thought, 'Let me think.');
    assert.equal(signature, 'sig-abc');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'get_weather');
    assert.deepEqual(calls[0].args, { city: 'Paris' });
    assert.equal(citations, 1);
    assert.equal(last.candidates[0].finishReason, 'STOP');
    assert.equal(last.usageMetadata.promptTokenCount, 40);
    assert.equal(last.usageMetadata.thoughtsTokenCount, 5);
    assert.equal(last.responseId, 'resp-id-1');
  } finally {
    await srv.close();
  }
});

test('an error mid-stream surfaces as an error', async () => {
  const srv = await serve('gemini-error.sse');
  try {
    const ai = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: srv.url } });
    await assert.rejects((async () => {
      const stream = await ai.models.generateContentStream({ model: 'asked-model', contents: 'hi' });
      for await (const chunk of stream) void chunk;
    })(), (err) => err instanceof Error && /upstream went away/.test(err.message));
  } finally {
    await srv.close();
  }
});
