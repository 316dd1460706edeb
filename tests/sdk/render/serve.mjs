// Serve one file of rendered bytes, as an event stream, to whatever the
// SDK under test posts: the bytes are the emitter's rendering of a
// hand-made judged stream (written by tests/integration/test_sdk.c).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

export const fixtures = process.env.SLUICE_SDK_FIXTURES;

export async function serve (name) {
  const body = fs.readFileSync(path.join(fixtures, name));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, close: () => new Promise((resolve) => server.close(resolve)) };
}
