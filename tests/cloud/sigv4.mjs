// The AWS SDK's SigV4 signer (@smithy/signature-v4), for
// tests/integration/test_cloud.c: the same request signed by it and by
// sluice (common/cloud/sl_sigv4) must carry the same headers.
//
//   node sigv4.mjs REQUEST.json   prints the signed request's headers, one
//                                 "name: value" line each, sorted by name
//
// REQUEST.json: { accessKeyId, secretAccessKey, sessionToken?, region,
// service, time (seconds since the epoch), method, host, path (as sent,
// encoded once), query? (name -> value, decoded), headers (name -> value),
// body }. The path is given as the AWS SDK's serializer writes it; the
// signer encodes it once more (uriEscapePath, its default for every
// service but S3).
import { readFileSync } from "node:fs";
import { Sha256 } from "@aws-crypto/sha256-js";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const signer = new SignatureV4({
  credentials: {
    accessKeyId: spec.accessKeyId,
    secretAccessKey: spec.secretAccessKey,
    ...(spec.sessionToken ? { sessionToken: spec.sessionToken } : {}),
  },
  region: spec.region,
  service: spec.service,
  sha256: Sha256,
});
const [hostname, port] = spec.host.split(":");
const request = new HttpRequest({
  method: spec.method,
  protocol: "https:",
  hostname,
  ...(port ? { port: Number(port) } : {}),
  path: spec.path,
  query: spec.query ?? {},
  headers: { host: spec.host, ...spec.headers },
  body: spec.body,
});
const signed = await signer.sign(request, { signingDate: new Date(spec.time * 1000) });
const lines = Object.entries(signed.headers)
  .map(([name, value]) => `${name.toLowerCase()}: ${value}`)
  .sort();
process.stdout.write(lines.join("\n") + "\n");
