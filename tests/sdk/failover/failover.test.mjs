// The official SDKs on routes whose first provider fails before its first
// byte (tests/integration/test_failover.c starts the stack): each client
// reads one intact stream from the second provider, with no error, as if
// the first had never been tried. fo-openai: an Anthropic-dialect provider
// answers 529, then the OpenAI one serves; fo-anthropic: an OpenAI-dialect
// provider answers 429 asking for 30 s, then the Anthropic one serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const TEXT = 'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at ' +
  'a time, so you can watch the proxy work.';
const messages = [{ role: 'user', content: 'hi' }];

test('openai chat completions: served by the second provider, translated back', async () => {
  const client = new OpenAI({ baseURL: process.env.SLUICE_OPENAI_BASE_URL, apiKey: 'sk-test', maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'fo-openai', messages, stream: true });
  let text = '';
  let finishes = 0;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta?.content || '';
      if (choice.finish_reason) finishes++;
    }
  }
  assert.equal(text, TEXT);
  assert.equal(finishes, 1);
});

test('anthropic messages: served by the second provider', async () => {
  const client = new Anthropic({ baseURL: process.env.SLUICE_ANTHROPIC_BASE_URL, apiKey: 'sk-test', maxRetries: 0 });
  const message = await client.messages.stream({ model: 'fo-anthropic', max_tokens: 100, messages }).finalMessage();
  assert.equal(message.content.map((b) => b.text || '').join(''), TEXT);
  assert.equal(message.stop_reason, 'end_turn');
});
