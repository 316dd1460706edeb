// receiver.mjs - an OTLP/HTTP traces receiver for the exporter's tests.
//
// Listens on 127.0.0.1:<port> for POST /v1/traces. A protobuf body is
// decoded with the official decoder (the protobufjs code generated from
// opentelemetry-proto that @opentelemetry/otlp-transformer ships); a JSON
// body is checked against the OTLP/JSON mapping (hex ids, int64 as decimal
// strings, enums as integers). Either way the request is checked for
// OTLP's shape and written, normalised to one form, as one JSON line to
// the --out file, so that the C test reads the same thing for both
// encodings. --mode makes it misbehave:
//   ok       200 with an empty ExportTraceServiceResponse (default)
//   partial  200 with partialSuccess.rejectedSpans = --rejected
//   400      400 Bad Request (refused for good)
//   500      500 (try again)
//   429      429 with Retry-After: --retry-after seconds
//   garbage  200 with a body that is no ExportTraceServiceResponse
//   hang     never answers
// Prints "listening <port>" once it accepts connections.
import { createServer } from 'node:http';
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const proto = root.opentelemetry.proto;
const Request = proto.collector.trace.v1.ExportTraceServiceRequest;
const Response = proto.collector.trace.v1.ExportTraceServiceResponse;

const args = { port: 0, out: '/dev/stdout', mode: 'ok', 'retry-after': '1', rejected: '1' };
for (let i = 2; i + 1 < process.argv.length; i += 2)
    args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

const HEX = /^[0-9a-f]*$/;
const DIGITS = /^[0-9]+$/;

function fail(why) {
    throw new Error(why);
}

// An AnyValue, as the JSON mapping writes it (the protobuf one is turned
// into the same form by toObject with longs and bytes as strings).
function checkValue(v, where) {
    if (typeof v !== 'object' || v === null)
        fail(`${where}: value is not an object`);
    const kinds = Object.keys(v);
    if (kinds.length !== 1)
        fail(`${where}: value has ${kinds.length} kinds`);
    const kind = kinds[0];
    const x = v[kind];
    switch (kind) {
        case 'stringValue': if (typeof x !== 'string') fail(`${where}: stringValue`); return { stringValue: x };
        case 'boolValue': if (typeof x !== 'boolean') fail(`${where}: boolValue`); return { boolValue: x };
        case 'intValue': if (typeof x !== 'string' || !/^-?[0-9]+$/.test(x)) fail(`${where}: intValue must be a decimal string`); return { intValue: x };
        case 'doubleValue': if (typeof x !== 'number' && !['NaN', 'Infinity', '-Infinity'].includes(x)) fail(`${where}: doubleValue`); return { doubleValue: x };
        case 'arrayValue':
            if (!Array.isArray(x.values)) fail(`${where}: arrayValue.values`);
            return { arrayValue: x.values.map((e, i) => checkValue(e, `${where}[${i}]`)) };
        default: fail(`${where}: unknown value kind ${kind}`);
    }
}

function checkAttrs(list, where) {
    if (list === undefined)
        return {};
    if (!Array.isArray(list))
        fail(`${where}: attributes is not an array`);
    const out = {};
    for (const kv of list) {
        if (typeof kv.key !== 'string' || kv.key === '')
            fail(`${where}: attribute without a key`);
        if (kv.key in out)
            fail(`${where}: attribute ${kv.key} twice`);
        out[kv.key] = checkValue(kv.value, `${where}.${kv.key}`);
    }
    return out;
}

function checkId(id, size, where, optional) {
    if (optional && (id === undefined || id === ''))
        return undefined;
    if (typeof id !== 'string' || id.length !== size * 2 || !HEX.test(id) || /^0+$/.test(id))
        fail(`${where}: not ${size} bytes of lowercase hex, not all zero: ${id}`);
    return id;
}

function checkTime(t, where) {
    if (typeof t !== 'string' || !DIGITS.test(t))
        fail(`${where}: must be a decimal string`);
    return t;
}

// The request in one form; throws on anything OTLP does not allow.
function normalise(req, encoding) {
    if (!Array.isArray(req.resourceSpans) || req.resourceSpans.length === 0)
        fail('no resourceSpans');
    const out = { encoding, resources: [] };
    for (const rs of req.resourceSpans) {
        const resource = checkAttrs(rs.resource?.attributes, 'resource');
        const scopes = [];
        for (const ss of rs.scopeSpans ?? []) {
            const spans = [];
            for (const s of ss.spans ?? []) {
                if (typeof s.name !== 'string') fail('span without a name');
                if (!Number.isInteger(s.kind)) fail(`${s.name}: kind must be an integer`);
                const start = checkTime(s.startTimeUnixNano, `${s.name}.startTimeUnixNano`);
                const end = checkTime(s.endTimeUnixNano, `${s.name}.endTimeUnixNano`);
                if (BigInt(end) < BigInt(start)) fail(`${s.name}: ends before it starts`);
                const span = {
                    name: s.name,
                    traceId: checkId(s.traceId, 16, `${s.name}.traceId`),
                    spanId: checkId(s.spanId, 8, `${s.name}.spanId`),
                    parentSpanId: checkId(s.parentSpanId, 8, `${s.name}.parentSpanId`, true) ?? null,
                    traceState: s.traceState || null,
                    kind: s.kind,
                    startTimeUnixNano: start,
                    endTimeUnixNano: end,
                    attributes: checkAttrs(s.attributes, s.name),
                    droppedAttributesCount: s.droppedAttributesCount ?? 0,
                    status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
                };
                if (!Number.isInteger(span.status.code)) fail(`${s.name}: status.code must be an integer`);
                spans.push(span);
            }
            scopes.push({ scope: ss.scope ?? {}, spans });
        }
        out.resources.push({ resource, scopes });
    }
    return out;
}

function hex(b64) {
    return Buffer.from(b64, 'base64').toString('hex');
}

// protobufjs's object form, with ids (base64 there) in hex as in JSON.
function fromProtobuf(body) {
    const msg = Request.decode(body);
    const obj = Request.toObject(msg, { longs: String, bytes: String, enums: Number, defaults: false });
    for (const rs of obj.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
                for (const f of ['traceId', 'spanId', 'parentSpanId'])
                    if (s[f] !== undefined) s[f] = hex(s[f]);
    return normalise(obj, 'protobuf');
}

function fromJson(body) {
    return normalise(JSON.parse(body.toString('utf8')), 'json');
}

let requests = 0;

const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        const body = Buffer.concat(chunks);
        const type = (req.headers['content-type'] || '').split(';')[0].trim();
        const line = { request: ++requests, mode: args.mode, path: req.url, contentType: type,
                       authorization: req.headers['authorization'] ?? null };
        let ok = true;
        try {
            if (req.method !== 'POST' || req.url !== '/v1/traces')
                fail(`${req.method} ${req.url}`);
            if (type === 'application/x-protobuf')
                Object.assign(line, fromProtobuf(body));
            else if (type === 'application/json')
                Object.assign(line, fromJson(body));
            else
                fail(`content type ${type}`);
        } catch (e) {
            ok = false;
            line.error = String(e.message ?? e);
        }
        appendFileSync(args.out, JSON.stringify(line) + '\n');
        if (!ok) {
            res.writeHead(400, { 'content-type': 'text/plain' });
            return res.end(line.error);
        }
        const json = type === 'application/json';
        const answer = (status, partial) => {
            const headers = { 'content-type': type };
            let payload;
            if (json)
                payload = partial ? JSON.stringify({ partialSuccess: { rejectedSpans: String(partial), errorMessage: 'refused' } }) : '{}';
            else
                payload = Buffer.from(Response.encode(Response.fromObject(partial ? { partialSuccess: { rejectedSpans: Number(partial), errorMessage: 'refused' } } : {})).finish());
            res.writeHead(status, headers);
            res.end(payload);
        };
        switch (args.mode) {
            case 'ok': return answer(200, 0);
            case 'partial': return answer(200, Number(args.rejected));
            case '400': res.writeHead(400, { 'content-type': 'text/plain' }); return res.end('bad request');
            case '500': res.writeHead(500, { 'content-type': 'text/plain' }); return res.end('unavailable');
            case '429':
                res.writeHead(429, { 'retry-after': args['retry-after'], 'content-type': 'text/plain' });
                return res.end('slow down');
            case 'garbage':
                res.writeHead(200, { 'content-type': type });
                return res.end(json ? 'this is not json' : Buffer.from([0xff, 0xff, 0xff, 0xff]));
            case 'hang': return;        // the exporter's timeout ends it
            default: res.writeHead(500); return res.end(`unknown mode ${args.mode}`);
        }
    });
});

server.listen(Number(args.port), '127.0.0.1', () => {
    console.log(`listening ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
