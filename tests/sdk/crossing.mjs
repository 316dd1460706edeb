// Every client against every upstream dialect: the stack's routes send a
// model "<scenario>@<dialect>" to the mock of that dialect, whatever the
// client speaks (the mock plays the scenario before the @). What each SDK
// must see is what it sees from an upstream of its own dialect: the text,
// the calls with ids it can answer with, a finish that says whether a
// call is left, usage, errors as its own error class; and a second turn
// that sends a tool result back, which the mock checks as its provider
// would (tool results paired with their calls, in that provider's way)
// and answers by naming the tool and what it said, taken from the
// translated history.

// The clouds' upstreams too (vertex, vertex-anthropic, azure) when the
// stack routes them: SLUICE_SDK_CLOUDS names them, comma-separated.
const CLOUDS = (process.env.SLUICE_SDK_CLOUDS || '').split(',').filter((c) => c);
export const UPSTREAMS = ['openai', 'responses', 'anthropic', 'gemini', ...CLOUDS];
export const at = (scenario, upstream) => `${scenario}@${upstream}`;

export const TEXT = 'Let me check the weather and tidy up.';
export const NOTICE = '\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf).';
export const MOCK_TEXT = 'Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece ' +
  'at a time, so you can watch the proxy work.';
export const MOCK_USAGE = { input: 12, output: 30 };

// mock-agent-shell: a text, then the request's shell tool with this
// command (the policy lets it run); after a tool result, the final text.
export const AGENT_TEXT = 'I\'ll run a shell command.';
export const SHELL_COMMAND = 'touch sluice-ok.marker';
export const TOOL_OUTPUT = 'marker made';
export const DONE = `sluice-agent: done. run_shell said: ${TOOL_OUTPUT}`;

// A call id every dialect's API takes back.
export const CALL_ID = /^[A-Za-z0-9_-]+$/;
