// Entra ID's token requests as Microsoft's own library makes them, for
// tests/integration/test_cloud.c: @azure/identity's ClientSecretCredential
// and WorkloadIdentityCredential next to sluice's (common/cloud/sl_aztoken),
// and @azure/identity taking a token from the embedded mock's endpoint.
//
// @azure/identity (MSAL) talks to an authority over HTTPS only and reads
// its OpenID configuration first, so a local HTTPS server (the test's
// self-signed certificate, trusted through NODE_EXTRA_CA_CERTS) serves
// the configuration and the token endpoint; sluice's requests come to a
// plain HTTP server on another port. Instance discovery is off: nothing
// leaves 127.0.0.1.
//
//   node identity.mjs capture HTTP_PORT HTTPS_PORT CERT KEY TOKEN_FILE
//       waits (at most 30 s) for sluice's two token requests on HTTP_PORT
//       (a client secret's, then workload identity's), makes the same two
//       with @azure/identity against HTTPS_PORT, and compares them: method,
//       path, the form's OAuth fields (MSAL's telemetry fields, x-client-*
//       and client_info, are MSAL's own and left out). Prints the pairs as
//       JSON; exits non-zero, saying what differs, when they do not match.
//   node identity.mjs mock MOCK_PORT HTTPS_PORT CERT KEY SECRET
//       ClientSecretCredential against the mock's token endpoint (the
//       HTTPS server passes the token request on to the mock's HTTP port),
//       with SECRET; prints the token, or "refused: <the library's error>".
import { createServer as createHttp, request as httpRequest } from "node:http";
import { createServer as createHttps } from "node:https";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { ClientSecretCredential, WorkloadIdentityCredential } from "@azure/identity";

const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const CLIENT = "0a1b2c3d-1111-2222-3333-0123456789ab";
const SECRET = "reference~secret.value";
const SCOPE = "https://cognitiveservices.azure.com/.default";
const TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.reference-token";
const OAUTH_FIELDS = ["grant_type", "client_id", "scope", "client_secret", "client_assertion_type", "client_assertion"];

const [mode, portA, portB, certFile, keyFile, last] = process.argv.slice(2);
const httpsPort = Number(portB);
const authority = `https://127.0.0.1:${httpsPort}`;
const tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };

// The OpenID configuration MSAL reads for a tenant of the authority.
function openidConfiguration(tenant) {
  const base = `${authority}/${tenant}`;
  return {
    issuer: `${base}/v2.0`,
    token_endpoint: `${base}/oauth2/v2.0/token`,
    authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
    end_session_endpoint: `${base}/oauth2/v2.0/logout`,
    jwks_uri: `${base}/discovery/v2.0/keys`,
    response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
  };
}

function readBody(req) {
  return new Promise((ok) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => ok(body));
  });
}

function json(res, status, value) {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(value));
}

// A token request as compared: method, path, the OAuth fields of its form.
function tokenRequest(req, body) {
  const form = new URLSearchParams(body);
  const fields = {};
  for (const name of OAUTH_FIELDS) if (form.has(name)) fields[name] = form.get(name);
  return { method: req.method, path: new URL(req.url, "http://x").pathname, fields,
           contentType: String(req.headers["content-type"] || "").replace(/\s/g, "").toLowerCase() };
}

// Serves the OpenID configuration; a token request goes to onToken.
function httpsAuthority(onToken) {
  return createHttps(tls, async (req, res) => {
    const body = await readBody(req);
    const path = new URL(req.url, authority).pathname;
    const config = path.match(/^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/);
    if (req.method === "GET" && config) return json(res, 200, openidConfiguration(config[1]));
    if (req.method === "POST" && path.endsWith("/oauth2/v2.0/token")) return onToken(req, body, res);
    json(res, 404, { error: "not_found", error_description: `no ${req.method} ${path} here` });
  });
}

function listen(server, port) {
  return new Promise((ok) => server.listen(port, "127.0.0.1", ok));
}

const answer = { token_type: "Bearer", expires_in: 3599, ext_expires_in: 3599, access_token: TOKEN };

if (mode === "capture") {
  const tokenFile = last;
  const sluice = [];
  const reference = [];
  const http = createHttp(async (req, res) => {
    const body = await readBody(req);
    sluice.push(tokenRequest(req, body));
    json(res, 200, answer);
  });
  const https = httpsAuthority((req, body, res) => {
    reference.push(tokenRequest(req, body));
    json(res, 200, answer);
  });
  await listen(http, Number(portA));
  await listen(https, httpsPort);
  process.stdout.write("listening\n");
  for (let i = 0; i < 300 && sluice.length < 2; i++) await new Promise((ok) => setTimeout(ok, 100));
  assert.equal(sluice.length, 2, "sluice's two token requests came");
  const options = { authorityHost: authority, disableInstanceDiscovery: true };
  const secret = await new ClientSecretCredential(TENANT, CLIENT, SECRET, options).getToken(SCOPE);
  assert.equal(secret.token, TOKEN);
  const workload = await new WorkloadIdentityCredential({ tenantId: TENANT, clientId: CLIENT,
                                                          tokenFilePath: tokenFile, ...options }).getToken(SCOPE);
  assert.equal(workload.token, TOKEN);
  assert.equal(reference.length, 2, "@azure/identity's two token requests came");
  const pairs = { client_secret: { sluice: sluice[0], reference: reference[0] },
                  workload_identity: { sluice: sluice[1], reference: reference[1] } };
  http.close();
  https.close();
  process.stdout.write(JSON.stringify(pairs) + "\n");
  for (const [name, { sluice: ours, reference: theirs }] of Object.entries(pairs)) {
    assert.equal(ours.method, theirs.method, `${name}: the method`);
    assert.equal(ours.path, theirs.path, `${name}: the path`);
    assert.equal(ours.contentType, theirs.contentType, `${name}: the content type`);
    assert.deepEqual(ours.fields, theirs.fields, `${name}: the form's fields`);
  }
  process.exit(0);
}

if (mode === "mock") {
  const mockPort = Number(portA);
  const secret = last;
  // The token request passed on to the mock as it came.
  const https = httpsAuthority((req, body, res) => {
    const path = new URL(req.url, authority).pathname;
    const up = httpRequest({ host: "127.0.0.1", port: mockPort, method: "POST", path,
                             headers: { "content-type": req.headers["content-type"],
                                        "content-length": Buffer.byteLength(body) } }, (r) => {
      let text = "";
      r.on("data", (c) => (text += c));
      r.on("end", () => {
        res.writeHead(r.statusCode, { "content-type": r.headers["content-type"] || "application/json" });
        res.end(text);
      });
    });
    up.on("error", (err) => json(res, 502, { error: "temporarily_unavailable", error_description: err.message }));
    up.end(body);
  });
  await listen(https, httpsPort);
  const credential = new ClientSecretCredential(TENANT, CLIENT, secret,
                                                { authorityHost: authority, disableInstanceDiscovery: true });
  try {
    const { token, expiresOnTimestamp } = await credential.getToken(SCOPE);
    assert.ok(expiresOnTimestamp > Date.now(), "a token that has not expired");
    process.stdout.write(token + "\n");
  } catch (err) {
    process.stdout.write(`refused: ${String(err.message).split("\n")[0]}\n`);
  }
  https.close();
  process.exit(0);
}

throw new Error(`unknown mode ${mode}`);
