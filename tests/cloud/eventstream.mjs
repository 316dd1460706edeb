// The AWS SDK's event stream codec (@smithy/eventstream-codec), for
// tests/integration/test_cloud.c: sluice's framing (common/cloud/sl_evstream)
// is checked against it both ways.
//
//   node eventstream.mjs encode OUT   the messages below, framed by the SDK, into OUT
//   node eventstream.mjs decode IN    every message of IN, decoded by the SDK, one
//                                     JSON line each: its headers (name, type,
//                                     value) in order and its body as UTF-8
import { readFileSync, writeFileSync } from "node:fs";
import { EventStreamCodec, Int64 } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";

const codec = new EventStreamCodec(toUtf8, fromUtf8);

// What Bedrock sends (two events, an exception), then every header type.
// test_cloud.c encodes the same messages with sl_evstream.
function typed(kind, type, body) {
  return {
    headers: {
      [kind === "event" ? ":event-type" : ":exception-type"]: { type: "string", value: type },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: kind },
    },
    body: fromUtf8(body),
  };
}

const messages = [
  typed("event", "messageStart", '{"role":"assistant"}'),
  typed("event", "contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"h\u00e9llo \u2713"}}'),
  typed("exception", "throttlingException", '{"message":"Too many requests, please wait before trying again."}'),
  {
    headers: {
      t: { type: "boolean", value: true },
      f: { type: "boolean", value: false },
      b: { type: "byte", value: -5 },
      s: { type: "short", value: -300 },
      i: { type: "integer", value: -70000 },
      l: { type: "long", value: Int64.fromNumber(-5000000000) },
      y: { type: "binary", value: new Uint8Array([0, 1, 2]) },
      str: { type: "string", value: "value" },
      ts: { type: "timestamp", value: new Date(1700000000123) },
      u: { type: "uuid", value: "01020304-0506-0708-090a-0b0c0d0e0f10" },
    },
    body: fromUtf8("payload"),
  },
];

function show(value, type) {
  if (type === "long") return value.toString();
  if (type === "timestamp") return value.getTime();
  if (type === "binary") return Buffer.from(value).toString("hex");
  return value;
}

const [mode, file] = process.argv.slice(2);
if (mode === "encode") {
  writeFileSync(file, Buffer.concat(messages.map((m) => codec.encode(m))));
} else if (mode === "decode") {
  const bytes = readFileSync(file);
  const lines = [];
  for (let at = 0; at < bytes.length; ) {
    const total = bytes.readUInt32BE(at);
    const message = codec.decode(bytes.subarray(at, at + total));
    const headers = Object.entries(message.headers).map(([name, h]) => [name, h.type, show(h.value, h.type)]);
    lines.push(JSON.stringify({ headers, body: toUtf8(message.body) }));
    at += total;
  }
  process.stdout.write(lines.join("\n") + "\n");
} else {
  console.error("usage: node eventstream.mjs encode OUT | decode IN");
  process.exit(2);
}
