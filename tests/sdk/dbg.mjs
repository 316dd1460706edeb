import Anthropic from '@anthropic-ai/sdk';
import { serveRecording, replayModel } from './recorded.mjs';
const file = process.argv[2];
const srv = await serveRecording(file);
const plain = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
const ask = (model) => ({ model, max_tokens: 256, messages: [{role:'user',content:'hi'}] });
try { console.log('direct', JSON.stringify(await plain.messages.stream(ask('r')).finalMessage()).slice(0, 3000)); } catch (e) { console.log('direct err', e.message); }
await srv.close();
const client = new Anthropic({ baseURL: 'http://127.0.0.1:27080', apiKey: 'x', maxRetries: 0 });
try { console.log('via', JSON.stringify(await client.messages.stream(ask(replayModel(file))).finalMessage()).slice(0, 3000)); } catch (e) { console.log('via err', e.message); }
