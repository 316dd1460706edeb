// What the SDK tests need for held calls and errors mid-stream: a fetch
// that hands the SDK the response as it is and keeps a copy of the bytes,
// so a test can check both what the SDK made of a stream and what the
// stream was (keep-alives, the events that end a failed response).
//
// The mock's coding-agent scenarios (services/mock/sl_mock_agent.h) call
// the request's run_shell tool; the stack's policy (tests/agents/policy.yaml)
// has an LLM judge take 4.5 s over a command with "sluice-slow", and ends
// the response at a command with "sluice-terminate".

export const HELD_COMMAND = 'touch sluice-slow.marker';
export const HELD_TEXT_COMMAND = 'touch sluice-slow-text.marker';
export const TERMINATED = 'sluice ended this response: the command asked for it (rule end-on-request).';
export const UPSTREAM_FAILED = /mock upstream failed mid-stream|operation was cancelled/;

//
// The SDK's abort reaches the request only until its response arrives:
// an SDK that stops reading at an error event (openai 7 aborts there)
// must not cut the copy short, which keeps the events after it.
export function capturing () {
  const seen = { bytes: '' };
  const base = globalThis.fetch;        // the global one may be replaced by this one
  const fetch = async (url, init = {}) => {
    const own = new AbortController();
    const forward = () => own.abort(init.signal.reason);
    if (init.signal?.aborted)
      forward();
    init.signal?.addEventListener('abort', forward);
    let res;
    try {
      res = await base(url, { ...init, signal: own.signal });
    } finally {
      init.signal?.removeEventListener('abort', forward);
    }
    if (!res.body)
      return res;
    const [mine, theirs] = res.body.tee();
    seen.done = (async () => {
      const reader = mine.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done)
          break;
        seen.bytes += decoder.decode(value, { stream: true });
      }
    })();
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { fetch, seen };
}

// The bytes before the first event (a data: or event: line).
export function beforeFirstEvent (bytes) {
  const at = bytes.search(/^(data|event):/m);
  return at < 0 ? bytes : bytes.slice(0, at);
}

// How many SSE comments ": keep-alive" the bytes hold.
export const keepAlives = (bytes) => (bytes.match(/^: keep-alive\n\n/mg) || []).length;
