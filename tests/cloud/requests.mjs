// What the clouds' own SDKs send, next to what sluice sends for the same
// call, for tests/integration/test_cloud.c. One HTTP server on 127.0.0.1
// stands for Vertex AI, Azure OpenAI and Google's token endpoint, and
// keeps every request; each case makes the same call twice:
//
//   vertex-anthropic  @anthropic-ai/vertex-sdk straight to the server, and
//                     @anthropic-ai/sdk through sluice (a provider of
//                     dialect vertex-anthropic at the server);
//   vertex            @google/genai in Vertex mode straight, and in
//                     Gemini API mode through sluice (dialect vertex);
//   azure             openai's AzureOpenAI (a deployment, an api-version)
//                     straight, and OpenAI through sluice (dialect azure,
//                     a deployments map).
//
// and compares the two requests: method, path, query, the headers the
// API reads, and the body. Prints the pairs as JSON; exits non-zero,
// saying what differs, when they do not match. The differences allowed
// are named where they are (Vertex AI's API version in the path and in
// Claude's body, the usage sluice asks Azure for).
//
//   node requests.mjs SLUICE_URL PORT   sluice's gateway; the server's port
//                                       (the stack's routes point there)
import { createServer } from "node:http";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { AnthropicVertex } from "@anthropic-ai/vertex-sdk";
import { GoogleGenAI } from "@google/genai";
import { OAuth2Client } from "google-auth-library";
import OpenAI, { AzureOpenAI } from "openai";

const [sluice, portText] = process.argv.slice(2);
const port = Number(portText);
const TOKEN = "ya29.reference-token";
const AZURE_KEY = "azure-reference-key";

const seen = [];
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const url = new URL(req.url, `http://127.0.0.1:${port}`);
    if (req.method === "POST" && url.pathname === "/token") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ access_token: TOKEN, expires_in: 3599, token_type: "Bearer" }));
      return;
    }
    seen.push({ method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams),
                headers: req.headers, body: body ? JSON.parse(body) : null });
    // A refusal ends each call at once: the request is what is compared.
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: 400, message: "captured", status: "INVALID_ARGUMENT" } }));
  });
});
await new Promise((ok) => server.listen(port, "127.0.0.1", ok));

// The request a call made (the calls fail on purpose: the server refuses).
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

const pick = (headers, names) => Object.fromEntries(names.map((n) => [n, headers[n]]));
const base = `http://127.0.0.1:${port}`;
const out = {};
const problems = [];
function compare(name, ours, theirs, headerNames, normalize = (r) => r) {
  const a = normalize(structuredClone(ours)), b = normalize(structuredClone(theirs));
  out[name] = { sluice: { ...a, headers: pick(a.headers, headerNames) },
                sdk: { ...b, headers: pick(b.headers, headerNames) } };
  for (const part of ["method", "path", "query", "body"])
    try { assert.deepEqual(a[part], b[part]); } catch { problems.push(`${name}: ${part} differs`); }
  try { assert.deepEqual(pick(a.headers, headerNames), pick(b.headers, headerNames)); }
  catch { problems.push(`${name}: headers differ`); }
}

// Google's credentials of both Vertex SDKs: a token given as is (the
// server is also a token endpoint, but only sluice's key file names it).
const authClient = new OAuth2Client();
authClient.setCredentials({ access_token: TOKEN, expiry_date: Date.now() + 3600 * 1000 });

// Claude on Vertex AI
const claude = { model: "claude-sonnet-4-5@20250929", max_tokens: 256, system: "Be brief.", temperature: 0.5,
                 messages: [{ role: "user", content: "What is the weather in Paris?" }],
                 tools: [{ name: "get_weather", description: "The weather of a city",
                           input_schema: { type: "object", properties: { city: { type: "string" } },
                                           required: ["city"] } }] };
const vertexClaude = new AnthropicVertex({ region: "us-east5", projectId: "p1", authClient,
                                           baseURL: `${base}/v1`, maxRetries: 0 });
const theirsClaude = await capture(() => vertexClaude.messages.create({ ...claude, stream: true }));
const viaSluice = new Anthropic({ baseURL: sluice, apiKey: "client-key", maxRetries: 0 });
const oursClaude = await capture(() => viaSluice.messages.create({ ...claude, stream: true }));
// The one difference: the SDK puts its core SDK's Messages API version
// (the anthropic-version header it would send to Anthropic) in
// anthropic_version; sluice sends the version Vertex AI documents.
assert.equal(oursClaude.body.anthropic_version, "vertex-2023-10-16");
compare("vertex-anthropic", oursClaude, theirsClaude, ["authorization", "content-type", "anthropic-version"],
        (r) => { delete r.body.anthropic_version; return r; });

// Gemini on Vertex AI. The SDK in Vertex mode calls v1beta1; sluice the
// GA v1 (the same API): the version is the one difference allowed.
const gemini = { model: "gemini-2.5-flash", contents: "What is the weather in Paris?",
                 config: { maxOutputTokens: 256, temperature: 0.5, systemInstruction: "Be brief.",
                           tools: [{ functionDeclarations: [{ name: "get_weather", description: "The weather of a city",
                                                              parameters: { type: "OBJECT", properties: { city: { type: "STRING" } },
                                                                            required: ["city"] } }] }] } };
const vertexGemini = new GoogleGenAI({ vertexai: true, project: "p1", location: "us-east5",
                                       googleAuthOptions: { authClient }, httpOptions: { baseUrl: base } });
const theirsGemini = await capture(async () => {
  for await (const _ of await vertexGemini.models.generateContentStream(gemini)); });
const geminiViaSluice = new GoogleGenAI({ apiKey: "client-key", httpOptions: { baseUrl: sluice } });
const oursGemini = await capture(async () => {
  for await (const _ of await geminiViaSluice.models.generateContentStream(gemini)); });
compare("vertex", oursGemini, theirsGemini, ["authorization", "content-type"],
        (r) => ({ ...r, path: r.path.replace(/^\/v1beta1\//, "/v1/") }));

// Azure OpenAI, a deployment and an api-version.
const chat = { model: "gpt-4o", max_tokens: 256, temperature: 0.5, stream: true,
               messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "What is the weather in Paris?" }],
               tools: [{ type: "function", function: { name: "get_weather", description: "The weather of a city",
                                                       parameters: { type: "object", properties: { city: { type: "string" } },
                                                                     required: ["city"] } } }] };
const azure = new AzureOpenAI({ endpoint: base, apiKey: AZURE_KEY, apiVersion: "2024-10-21", deployment: "prod-gpt4o",
                                maxRetries: 0 });
const theirsAzure = await capture(() => azure.chat.completions.create(chat));
const openaiViaSluice = new OpenAI({ baseURL: `${sluice}/v1`, apiKey: "client-key", maxRetries: 0 });
const oursAzure = await capture(() => openaiViaSluice.chat.completions.create(chat));
// The one difference: sluice asks for the usage at the end of the stream
// (what it counts and prices), which Azure's API takes.
assert.deepEqual(oursAzure.body.stream_options, { include_usage: true });
compare("azure", oursAzure, theirsAzure, ["api-key", "authorization", "content-type"],
        (r) => { delete r.body.stream_options; return r; });

server.close();
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
if (problems.length) {
  process.stderr.write(problems.join("\n") + "\n");
  process.exit(1);
}
