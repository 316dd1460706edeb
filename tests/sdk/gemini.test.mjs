// The Google Gen AI SDK against a running sluice (the mock upstream, the
// default policy deploy/policy.yaml): models.generateContentStream() and
// models.generateContent() for each mock scenario, recorded streams with
// thoughts and signatures, the models list, and errors as the SDK's own
// class. SLUICE_GEMINI_BASE_URL points at the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, GoogleGenAI } from '@google/genai';
import { replayModel, serveRecording, skipRecorded } from './recorded.mjs';
import { HELD_COMMAND, HELD_TEXT_COMMAND, TERMINATED, UPSTREAM_FAILED, beforeFirstEvent, capturing, keepAlives }
  from './held.mjs';
import { AGENT_TEXT, DONE, MOCK_USAGE, SHELL_COMMAND, TOOL_OUTPUT, UPSTREAMS, at } from './crossing.mjs';

const ai = new GoogleGenAI({ apiKey: 'sdk-test-key', httpOptions: { baseUrl: process.env.SLUICE_GEMINI_BASE_URL } });
const contents = 'What is the weather in Paris? Then tidy up.';
const config = {
  tools: [{ functionDeclarations: [
    { name: 'get_weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } },
    { name: 'run_shell', parameters: { type: 'OBJECT', properties: { command: { type: 'STRING' } } } },
  ] }],
};
const ask = (model) => ({ model, contents, config });
const TEXT = 'Let me check the weather and tidy up.';
const NOTICE = '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).';
const MOCK_TEXT = 'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at a time, ' +
  'so you can watch the proxy work.';

// What a client can see of a response (the chunks of a stream, or the one
// response): its text, thoughts, calls, signatures, citations, finish.
function shape (responses) {
  const out = { text: '', thought: '', calls: [], code: [], signatures: [], citations: 0, grounding: 0,
    finishReason: null, usage: null };
  for (const r of responses) {
    const candidate = r.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      if (part.thought && part.text)
        out.thought += part.text;
      else if (part.text)
        out.text += part.text;
      if (part.functionCall)
        out.calls.push({ name: part.functionCall.name, args: part.functionCall.args });
      if (part.thoughtSignature)
        out.signatures.push(part.thoughtSignature);
      if (part.executableCode)
        out.code.push(part.executableCode);
      if (part.codeExecutionResult)
        out.code.push(part.codeExecutionResult);
    }
    out.citations += candidate?.citationMetadata?.citations?.length ?? 0;
    out.grounding += candidate?.groundingMetadata?.groundingChunks?.length ?? 0;
    if (candidate?.finishReason)
      out.finishReason = candidate.finishReason;
    if (r.usageMetadata)
      out.usage = ['promptTokenCount', 'candidatesTokenCount', 'totalTokenCount', 'thoughtsTokenCount',
        'cachedContentTokenCount'].map((k) => r.usageMetadata[k] ?? 0);
  }
  return out;
}

async function streamed (client, request) {
  const chunks = [];
  for await (const chunk of await client.models.generateContentStream(request))
    chunks.push(chunk);
  return chunks;
}

function checkTools (view) {
  assert.equal(view.text, TEXT + NOTICE, 'the text, the blocked call as the notice');
  assert.deepEqual(view.calls, [{ name: 'get_weather', args: { city: 'Paris' } }], 'only the allowed call');
  assert.equal(view.finishReason, 'STOP');
}

test('mock-tools through generateContentStream(): the text, the call and the notice exactly', async () => {
  const chunks = await streamed(ai, ask('mock-tools'));
  checkTools(shape(chunks));
  assert.ok(chunks.length >= 4, `the answer streamed in pieces (${chunks.length})`);
  assert.ok(!JSON.stringify(chunks).includes('rm -rf'), 'the blocked arguments never arrive');
  assert.equal(chunks.at(-1).usageMetadata.totalTokenCount, 65);
});

test('mock-tools through generateContent(): the same answer in one response', async () => {
  const response = await ai.models.generateContent(ask('mock-tools'));
  checkTools(shape([response]));
  assert.deepEqual(response.functionCalls, [{ name: 'get_weather', args: { city: 'Paris' } }]);
  assert.ok(!JSON.stringify(response).includes('rm -rf'));
  assert.equal(response.usageMetadata.promptTokenCount, 40);
  assert.equal(response.usageMetadata.candidatesTokenCount, 25);
});

test('mock-text: the whole text, streamed and in one response', async () => {
  const chunks = await streamed(ai, ask('mock-text'));
  const once = await ai.models.generateContent(ask('mock-text'));
  assert.equal(shape(chunks).text, MOCK_TEXT);
  assert.equal(once.text, MOCK_TEXT);
  assert.deepEqual(shape([once]), shape(chunks));
  assert.deepEqual(once.usageMetadata, chunks.at(-1).usageMetadata);
});

test('mock-error: a failure surfaces as ApiError, streamed and not', async () => {
  let text = '';
  await assert.rejects(
    (async () => {
      for await (const chunk of await ai.models.generateContentStream(ask('mock-error')))
        text += shape([chunk]).text;
    })(),
    (err) => {
      assert.ok(err instanceof ApiError, `an ApiError, got ${err?.constructor?.name}: ${err}`);
      assert.match(err.message, /mock upstream failed mid-stream/);
      return true;
    });
  assert.equal(text, 'This answer will not', 'what came before the error was delivered');
  await assert.rejects(ai.models.generateContent(ask('mock-error')), (err) => {
    assert.ok(err instanceof ApiError, `an ApiError, got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 500);
    assert.match(err.message, /mock upstream failed mid-stream/);
    return true;
  });
});

test('a refused request surfaces as ApiError with sluice\'s reason', async () => {
  await assert.rejects(
    streamed(ai, { model: 'mock-text', contents: 'hi', config: { candidateCount: 2 } }),
    (err) => {
      assert.ok(err instanceof ApiError, `an ApiError, got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.match(err.message, /candidateCount/);
      return true;
    });
});

test('models.list(): the models routing offers', async () => {
  const names = [];
  for await (const model of await ai.models.list())
    names.push(model.name);
  assert.ok(names.includes('models/mock-text'), `listed: ${names}`);
});

// Not here: gemini-prompt-blocked-safety.sse, whose blocked prompt
// (promptFeedback.blockReason) reaches the client as a candidate finishing
// with SAFETY; gemini-error-mid-stream.sse ends in an error (mock-error
// covers errors); the Gemini 3 streamed arguments, below.
const recordings = [
  'gemini/gemini-text.sse',
  'gemini/gemini-basic-reply-long.sse',
  'gemini/gemini-thinking-reply-thought-summary.sse',
  'gemini/gemini-thinking-thought-parts.sse',
  'gemini/gemini-thinking-function-call-thought-summary-signature.sse',
  'gemini/gemini-3-function-call-thought-signature.sse',
  'gemini/gemini-function-call-full-args.sse',
  'gemini/gemini-recitation-citations.sse',
  'gemini/gemini-finish-reason-safety.sse',
  'gemini/gemini-code-execution.sse',
  'gemini/gemini-google-search-grounding.sse',
  'gemini/gemini-3-function-call-args-signature.chunks.jsonl',
];

for (const file of recordings) {
  test(`recorded ${file}: the same answer through sluice as straight from the provider`, { skip: skipRecorded },
    async () => {
      const srv = await serveRecording(file);
      let direct;
      try {
        const plain = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: srv.url } });
        direct = shape(await streamed(plain, ask('recorded')));
      } finally {
        await srv.close();
      }
      assert.deepEqual(shape(await streamed(ai, ask(replayModel(file)))), direct, 'streamed through sluice');
      assert.deepEqual(shape([await ai.models.generateContent(ask(replayModel(file)))]), direct,
        'in one response through sluice');
    });
}

// Gemini 3 streams a call's arguments in pieces (partialArgs), which the
// SDK hands over piece by piece; sluice assembles each call whole, as
// Gemini sends calls otherwise.
for (const file of ['gemini/gemini-3-streamed-function-call-args.chunks.jsonl',
  'gemini/gemini-3-parallel-streamed-function-calls.chunks.jsonl']) {
  test(`recorded ${file}: streamed arguments arrive as whole calls`, { skip: skipRecorded }, async () => {
    const view = shape(await streamed(ai, ask(replayModel(file))));
    assert.ok(view.calls.length >= 1, 'calls');
    for (const call of view.calls) {
      assert.ok(call.name, 'a named call');
      assert.equal(typeof call.args, 'object', `${call.name}: its arguments are one object`);
    }
    assert.ok(view.calls.some((call) => Object.values(call.args).some((v) => v !== '')),
      `the streamed values were put together: ${JSON.stringify(view.calls)}`);
    assert.deepEqual(shape([await ai.models.generateContent(ask(replayModel(file)))]), view, 'the same in one response');
  });
}

// Calls the LLM judge holds (4.5 s), and responses ended mid-stream: what
// Gemini CLI reads. The SDK takes no fetch of its own: the global one is
// wrapped for the request. See held.mjs.
const shellOnly = { tools: [{ functionDeclarations: [config.tools[0].functionDeclarations[1]] }] };

async function capturedStream (model) {
  const { fetch, seen } = capturing();
  const original = globalThis.fetch;
  globalThis.fetch = fetch;
  try {
    const chunks = await streamed(ai, { model, contents, config: shellOnly });
    await seen.done;
    return { chunks, bytes: seen.bytes };
  } finally {
    globalThis.fetch = original;
  }
}

// What the SDK inside Gemini CLI can read: data: events and the blank
// lines between them, nothing else (no comment).
function onlyDataEvents (bytes) {
  for (const line of bytes.split('\n'))
    assert.ok(line === '' || line === '\r' || line.startsWith('data: '), `a line that is no data: ${JSON.stringify(line)}`);
}

for (const [model, command, first] of [['mock-agent-slow', HELD_COMMAND, true],
  ['mock-agent-slow-text', HELD_TEXT_COMMAND, false]]) {
  test(`${model}: keep-alives the Gemini SDKs read while the judge holds the call${first ? ' (the first block)' : ''}`,
    async () => {
      const { chunks, bytes } = await capturedStream(model);
      const view = shape(chunks);
      assert.deepEqual(view.calls, [{ name: 'run_shell', args: { command } }], 'the judge allowed it, whole');
      assert.equal(view.finishReason, 'STOP');
      onlyDataEvents(bytes);
      const before = first ? beforeFirstEvent(bytes) : bytes.slice(bytes.indexOf('shell command.'),
        bytes.indexOf('functionCall'));
      assert.match(before, first ? /^\n+$/ : /\n\n\n/, `line ends while the call was held:\n${JSON.stringify(bytes)}`);
    });
}

test('mock-agent-error and mock-agent-terminate: ApiError with the provider\'s code and the message', async () => {
  for (const [model, status, message] of [['mock-agent-error', 499, /CANCELLED.*operation was cancelled/],
    ['mock-agent-terminate', 403, new RegExp(`PERMISSION_DENIED.*${TERMINATED.replace(/[().]/g, '\\$&')}`)]]) {
    let text = '';
    await assert.rejects(
      (async () => {
        for await (const chunk of await ai.models.generateContentStream({ model, contents, config: shellOnly }))
          text += shape([chunk]).text;
      })(),
      (err) => {
        assert.ok(err instanceof ApiError, `${model}: an ApiError, got ${err?.constructor?.name}: ${err}`);
        assert.equal(err.status, status, `${model}: the provider's code`);
        assert.match(err.message, message);
        return true;
      });
    assert.ok(text.length > 0, `${model}: the text before the failure was delivered`);
  }
});

// Every upstream dialect (crossing.mjs): the same client, translated.
for (const upstream of UPSTREAMS) {
  test(`to a ${upstream} upstream: mock-text streamed and in one response, with usage`, async () => {
    const model = at('mock-text', upstream);
    const chunks = await streamed(ai, { model, contents });
    const once = await ai.models.generateContent({ model, contents });
    for (const view of [shape(chunks), shape([once])]) {
      assert.equal(view.text, MOCK_TEXT);
      assert.equal(view.finishReason, 'STOP');
      assert.equal(view.usage[0], MOCK_USAGE.input);
      assert.equal(view.usage[1], MOCK_USAGE.output);
    }
  });

  test(`to a ${upstream} upstream: mock-tools, the allowed call and the notice`, async () => {
    const request = ask(at('mock-tools', upstream));
    const chunks = await streamed(ai, request);
    const once = await ai.models.generateContent(request);
    for (const view of [shape(chunks), shape([once])])
      checkTools(view);
    assert.ok(!JSON.stringify(chunks).includes('rm -rf') && !JSON.stringify(once).includes('rm -rf'),
      'the blocked arguments never arrive');
  });

  test(`to a ${upstream} upstream: mock-error as ApiError, streamed and not`, async () => {
    const model = at('mock-error', upstream);
    let text = '';
    await assert.rejects(
      (async () => {
        for await (const chunk of await ai.models.generateContentStream({ model, contents }))
          text += shape([chunk]).text;
      })(),
      (err) => {
        assert.ok(err instanceof ApiError, `an ApiError, got ${err?.constructor?.name}: ${err}`);
        assert.match(err.message, UPSTREAM_FAILED);
        return true;
      });
    assert.equal(text, 'This answer will not', 'what came before the error was delivered');
    await assert.rejects(ai.models.generateContent({ model, contents }),
      (err) => err instanceof ApiError && UPSTREAM_FAILED.test(err.message));
  });

  test(`to a ${upstream} upstream: two turns, the tool result goes back translated`, async () => {
    const model = at('mock-agent-shell', upstream);
    const first = await ai.models.generateContent({ model, contents, config: shellOnly });
    const view = shape([first]);
    assert.equal(view.text, AGENT_TEXT);
    assert.deepEqual(view.calls, [{ name: 'run_shell', args: { command: SHELL_COMMAND } }]);
    const call = first.functionCalls[0];
    const history = [{ role: 'user', parts: [{ text: contents }] }, first.candidates[0].content,
      { role: 'user', parts: [{ functionResponse: { id: call.id, name: call.name, response: { output: TOOL_OUTPUT } } }] }];
    const second = await ai.models.generateContent({ model, contents: history, config: shellOnly });
    assert.equal(second.text, DONE, 'the upstream read the result as its call\'s');
    assert.equal(shape(await streamed(ai, { model, contents: history, config: shellOnly })).text, DONE);
  });
}

test('what cannot cross: a Gemini tool of its own to another dialect is a 400 naming it', async () => {
  await assert.rejects(ai.models.generateContent({ model: at('mock-text', 'openai'), contents,
    config: { tools: [{ codeExecution: {} }] } }),
  (err) => err instanceof ApiError && err.status === 400 && /provider's own tool/.test(err.message));
});
