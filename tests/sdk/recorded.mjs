// Recorded provider streams (../shared/corpus), for the stack tests: the
// mock replays one through sluice when the model is "mock-replay/<path>",
// and the same SDK reads the recording straight from a local server here.
// What the SDK makes of both must agree: sluice passes on everything the
// client's format carries. SLUICE_SDK_CORPUS names the corpus directory
// when the stack's mock replays it; without it these tests are skipped.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

export const corpus = process.env.SLUICE_SDK_CORPUS || '';
export const skipRecorded = corpus ? false : 'the recorded streams (../shared/corpus) are not available';

// The recording as the provider sent it: .sse files verbatim, JSON lines
// (.jsonl) as one data: event per line, as the mock sends them.
function bytesOf (file) {
  const text = fs.readFileSync(path.join(corpus, file), 'utf8');
  if (!file.endsWith('.jsonl')) {
    // Some recordings lost the blank line that ends the last event.
    return text.endsWith('\n\n') ? text : text.endsWith('\n') ? `${text}\n` : `${text}\n\n`;
  }
  // Providers whose events have a type name them (the SDKs of Anthropic
  // read the event name); Gemini's have none.
  return text.split('\n').filter((line) => line.trim()).map((line) => {
    const type = JSON.parse(line).type;
    return (typeof type === 'string' ? `event: ${type}\n` : '') + `data: ${line}\n\n`;
  }).join('');
}

// Serve one recording to whatever the SDK posts; call close() when done.
export async function serveRecording (file) {
  const body = bytesOf(file);
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

// The model name that makes the mock replay a recording.
export const replayModel = (file) => `mock-replay/${file}`;
