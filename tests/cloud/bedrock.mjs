// Amazon Bedrock's own client (@aws-sdk/client-bedrock-runtime) against
// sluice, for tests/integration/test_cloud.c. The AWS credentials are the
// environment's (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), as for sluice.
//
//   node bedrock.mjs decode MOCK_URL    ConverseStream and
//       InvokeModelWithResponseStream against sluice's mock, signed: every
//       event the SDK decodes, as JSON (the event kinds in order, the
//       text, the tool calls, the stop reason, the usage; an exception
//       frame as the SDK's error name)
//   node bedrock.mjs requests SLUICE_URL PORT   one server on 127.0.0.1:PORT
//       stands for Bedrock and keeps every request; the same conversation
//       is sent by the SDK straight to it and by OpenAI's and Anthropic's
//       clients through sluice (models converse-claude and
//       claude-on-bedrock, which sluice's routes send there), and the two
//       requests are compared: method, path, the headers signed, the body.
//       Prints the pairs as JSON; exits non-zero, saying what differs,
//       when they differ other than as DIFFERENCES says.
import { createServer } from "node:http";
import assert from "node:assert/strict";
import {
  BedrockRuntimeClient, ConverseStreamCommand, InvokeModelWithResponseStreamCommand,
} from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const REGION = "us-west-2";
const [mode, ...args] = process.argv.slice(2);
// The SDK's own HTTP/1.1 handler: its default for this client is HTTP/2
// (what Bedrock speaks over TLS), which neither the mock nor sluice's
// loopback servers speak in clear text. What it sends is the same.
const client = (endpoint) => new BedrockRuntimeClient({ region: REGION, endpoint, maxAttempts: 1,
                                                        requestHandler: new NodeHttpHandler() });

const weather = { name: "get_weather", description: "The weather of a city",
                  schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const shell = { name: "run_shell", description: "Run a shell command",
                schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } };
const converseTools = { tools: [weather, shell].map((t) => ({
  toolSpec: { name: t.name, description: t.description, inputSchema: { json: t.schema } } })) };

// Every event of a stream, each kind named once per event.
async function converse(bedrock, modelId) {
  const out = { events: [], text: "", tools: [], stopReason: null, usage: null, error: null };
  try {
    const res = await bedrock.send(new ConverseStreamCommand({
      modelId, messages: [{ role: "user", content: [{ text: "What is the weather in Paris?" }] }],
      toolConfig: converseTools, inferenceConfig: { maxTokens: 256 } }));
    for await (const ev of res.stream) {
      const kind = Object.keys(ev).filter((k) => ev[k] !== undefined)[0];
      out.events.push(kind);
      const v = ev[kind];
      if (kind === "contentBlockStart" && v.start?.toolUse)
        out.tools.push({ id: v.start.toolUse.toolUseId, name: v.start.toolUse.name, input: "" });
      if (kind === "contentBlockDelta" && v.delta?.text !== undefined) out.text += v.delta.text;
      if (kind === "contentBlockDelta" && v.delta?.toolUse) out.tools.at(-1).input += v.delta.toolUse.input;
      if (kind === "messageStop") out.stopReason = v.stopReason;
      if (kind === "metadata") out.usage = { input: v.usage.inputTokens, output: v.usage.outputTokens };
    }
  } catch (err) {
    out.error = err.name;
  }
  return out;
}

async function claude(bedrock, modelId) {
  const out = { events: [], text: "", tools: [], stopReason: null, usage: null, error: null };
  const body = { anthropic_version: "bedrock-2023-05-31", max_tokens: 256,
                 messages: [{ role: "user", content: "What is the weather in Paris?" }],
                 tools: [weather, shell].map((t) => ({ name: t.name, description: t.description,
                                                       input_schema: t.schema })) };
  try {
    const res = await bedrock.send(new InvokeModelWithResponseStreamCommand({
      modelId, contentType: "application/json", accept: "application/json", body: JSON.stringify(body) }));
    for await (const ev of res.body) {
      if (!ev.chunk) { out.events.push(Object.keys(ev)[0]); continue; }
      const e = JSON.parse(Buffer.from(ev.chunk.bytes).toString("utf8"));
      out.events.push(e.type);
      if (e.type === "content_block_start" && e.content_block.type === "tool_use")
        out.tools.push({ id: e.content_block.id, name: e.content_block.name, input: "" });
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") out.text += e.delta.text;
      if (e.type === "content_block_delta" && e.delta.type === "input_json_delta")
        out.tools.at(-1).input += e.delta.partial_json;
      if (e.type === "message_delta") {
        out.stopReason = e.delta.stop_reason;
        out.usage = { output: e.usage.output_tokens };
      }
    }
  } catch (err) {
    out.error = err.name;
  }
  return out;
}

if (mode === "decode") {
  const bedrock = client(args[0]);
  const out = {};
  for (const scenario of ["mock-text", "mock-tools", "mock-error"]) {
    out[`converse/${scenario}`] = await converse(bedrock, scenario);
    out[`claude/${scenario}`] = await claude(bedrock, scenario);
  }
  process.stdout.write(JSON.stringify(out, null, 1) + "\n");
  process.exit(0);
}

// requests
const [sluice, portText] = args;
const port = Number(portText);
const seen = [];
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const auth = req.headers.authorization || "";
    const signed = /SignedHeaders=([^,]*)/.exec(auth);
    seen.push({ method: req.method, path: req.url, signedHeaders: signed ? signed[1].split(";") : null,
                scope: (/Credential=[^/]*\/[0-9]{8}\/([^,]*)/.exec(auth) || [])[1] || null,
                body: body ? JSON.parse(body) : null });
    // A refusal ends each call at once: the request is what is compared.
    res.writeHead(400, { "content-type": "application/json", "x-amzn-errortype": "ValidationException" });
    res.end(JSON.stringify({ message: "captured" }));
  });
});
await new Promise((ok) => server.listen(port, "127.0.0.1", ok));

async function capture(call) {
  const before = seen.length;
  try {
    await call();
  } catch (err) {
    if (process.env.REQUESTS_DEBUG) process.stderr.write(`${err}\n`);  // else the refusal
  }
  assert.equal(seen.length, before + 1, "one request per call");
  return seen[before];
}

// The differences sluice is known to have from the SDK, each named; any
// other is a failure. Each takes the pair and brings sluice's request to
// the SDK's where they differ as named.
const without = (list, name) => list.filter((h) => h !== name);
const DIFFERENCES = {
  // Headers the SDK adds and signs that Bedrock does not read: its user
  // agent (x-amz-user-agent) and its retry bookkeeping (amz-sdk-request,
  // amz-sdk-invocation-id).
  sdkHeaders: (ours, theirs) => {
    theirs.signedHeaders = theirs.signedHeaders.filter((h) => !/^(x-amz-user-agent|amz-sdk-)/.test(h));
  },
  // sluice sends Accept: application/vnd.amazon.eventstream and signs
  // it; the SDK sends no Accept header of its own to sign.
  accept: (ours) => { ours.signedHeaders = without(ours.signedHeaders, "accept"); },
  // The SDK signs Content-Length; sluice's HTTP client sets it after the
  // request is signed (SigV4 does not require it signed).
  contentLength: (ours, theirs) => { theirs.signedHeaders = without(theirs.signedHeaders, "content-length"); },
  // InvokeModelWithResponseStream's accept parameter (the type of the
  // body in each chunk) goes in X-Amzn-Bedrock-Accept; sluice leaves it
  // out, for Bedrock's default, application/json.
  bedrockAccept: (ours, theirs) => {
    theirs.signedHeaders = without(theirs.signedHeaders, "x-amzn-bedrock-accept");
  },
};

const base = `http://127.0.0.1:${port}`;
const bedrock = client(base);
const out = {};
const problems = [];
function compare(name, ours, theirs) {
  out[name] = { sluice: ours, sdk: theirs };
  const a = structuredClone(ours), b = structuredClone(theirs);
  for (const fix of Object.values(DIFFERENCES)) fix(a, b);
  for (const part of ["method", "path", "signedHeaders", "scope", "body"])
    try { assert.deepEqual(a[part], b[part]); }
    catch { problems.push(`${name}: ${part} differs: ${JSON.stringify(a[part])} / ${JSON.stringify(b[part])}`); }
}

const MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const question = "What is the weather in Paris?";

// Converse: the SDK's ConverseStream, and OpenAI's chat through sluice.
const theirsConverse = await capture(() => bedrock.send(new ConverseStreamCommand({
  modelId: MODEL, system: [{ text: "Be brief." }],
  messages: [{ role: "user", content: [{ text: question }] }],
  inferenceConfig: { maxTokens: 256, temperature: 0.5 },
  toolConfig: { tools: [converseTools.tools[0]] } })));
const openai = new OpenAI({ baseURL: `${sluice}/v1`, apiKey: "client-key", maxRetries: 0 });
const oursConverse = await capture(() => openai.chat.completions.create({
  model: "converse-claude", max_tokens: 256, temperature: 0.5, stream: true,
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: question }],
  tools: [{ type: "function", function: { name: weather.name, description: weather.description,
                                          parameters: weather.schema } }] }));
compare("bedrock", oursConverse, theirsConverse);

// Claude: the SDK's InvokeModelWithResponseStream with an Anthropic body,
// and Anthropic's client through sluice.
const claudeBody = { max_tokens: 256, system: "Be brief.", temperature: 0.5,
                     messages: [{ role: "user", content: question }],
                     tools: [{ name: weather.name, description: weather.description, input_schema: weather.schema }] };
const theirsClaude = await capture(() => bedrock.send(new InvokeModelWithResponseStreamCommand({
  modelId: MODEL, contentType: "application/json", accept: "application/json",
  body: JSON.stringify({ anthropic_version: "bedrock-2023-05-31", ...claudeBody }) })));
const anthropic = new Anthropic({ baseURL: sluice, apiKey: "client-key", maxRetries: 0 });
const oursClaude = await capture(() => anthropic.messages.create({ model: "claude-on-bedrock", ...claudeBody, stream: true }));
compare("bedrock-anthropic", oursClaude, theirsClaude);

server.close();
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
if (problems.length) {
  process.stderr.write(problems.join("\n") + "\n");
  process.exit(1);
}
