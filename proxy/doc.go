// Package proxy is skillrouter's OpenAI-compatible HTTP proxy: it routes and
// rewrites chat requests (via a Rewriter, normally package router), forwards
// them to an upstream OpenAI-compatible API and answers the model's own
// skill tool calls (load_skill, search_skills, tier-3 tools) server-side.
//
// A Server is configured by a Config and is an http.Handler, in the manner of
// net/http/httputil.ReverseProxy; ModifyRequest and ModifyResponse are hooks
// on every upstream exchange.
//
// # Endpoints
//
//   - POST /v1/chat/completions: validate (400 for malformed JSON, missing
//     messages or a parameter of the wrong type, named in the error's param;
//     413 over Config.BodyLimit), pick the A/B arm, rewrite, forward,
//     run the tool loop, answer. Per-request headers X-Skillrouter-Strategy,
//     -Top-K, -Disable, -Catalog, -Session (and -Arm with A/B) steer routing;
//     the answer carries X-Skillrouter-Selected, -Strategy, -Fallback,
//     -Fallback-Reason (the router's FallbackCode, never the detailed reason),
//     -Added-Tokens, -Tools-Withheld and -Arm. A failed rewrite never fails the request: the body goes upstream
//     unmodified and X-Skillrouter-Error says why.
//   - Any other /v1/* path: passed through unchanged, both bodies streamed.
//   - GET /healthz, GET /readyz, GET /metrics, GET /v1/skills,
//     POST /v1/skills/route (explain without forwarding), POST /v1/skills/reload.
//     These paths are the proxy's for every method: HEAD where GET is served,
//     OPTIONS, and 405 with Allow for the rest (never forwarded).
//
// Request headers are forwarded minus hop-by-hop headers and the proxy's own
// X-Skillrouter-* controls; Config.APIKey is used when the client sends no
// Authorization. Upstream 4xx/5xx answers are relayed unchanged (status and
// body); an unreachable upstream is 502, one that closes the connection
// without a (whole) response 502 too, a timed-out one 504, all as OpenAI
// error JSON. A client that disconnects cancels the upstream request.
//
// # Tool loop
//
// When an answer holds tool calls that the request's ToolSession handles, the
// proxy executes them, appends the assistant message (with only its own
// calls) and the tool results via Session.FollowUp, and asks again, for up to
// Config.MaxToolRounds rounds (a round = one batch of calls answered). The
// client sees only the final answer; its usage is the last round's (see
// wire.Usage; the access log has their sum), and X-Skillrouter-Tool-Rounds
// counts the rounds.
//
// Client tools in the same turn as the proxy's: the proxy answers its own
// calls first and drops the client's from that turn; the model, seeing the
// skill it asked for, calls the client's tools again in its next answer,
// which then reaches the client. This keeps the conversation the client
// holds consistent (every call it sees is one it must answer) at the price of
// the model repeating those calls.
//
// When the limit is reached and the last answer still calls the proxy's
// tools, that answer is returned with the proxy's calls removed (finish_reason
// "stop" if no call is left) and X-Skillrouter-Tool-Rounds-Exhausted: true.
// An answer that stopped short (wire.Answer.Truncated,
// wire.RoundEnd.Truncated: the output-token limit, a content filter or a
// refusal) is returned the same way, whatever round it is, with its
// finish_reason ("length", "content_filter"), status ("incomplete") or
// stop_reason ("max_tokens", "refusal") kept: its calls may be cut, and
// another round would stop the same way.
//
// # Streaming
//
// With "stream": true every server-sent event is written and flushed as it
// arrives; content is never buffered. Exceptions, all about the proxy's own
// tool calls:
//
//   - Tool-call deltas arrive split across chunks (index, id and name first,
//     then argument fragments). They are accumulated by index; once a call's
//     name is known it is either the proxy's (withheld) or the client's
//     (relayed from then on, with its index renumbered so the client sees
//     0, 1, ... without gaps).
//   - A client call that starts after a proxy call in the same turn is held
//     back and dropped when the turn loops (see above). If a client call has
//     already been relayed when a proxy call starts ("late" proxy call), the
//     turn belongs to the client: the proxy's calls in it are dropped (counted
//     in skillrouter_tool_calls_dropped_total) and the model can ask again on
//     the next turn.
//   - In a turn that loops, the finish_reason "tool_calls" chunk, the usage
//     chunk and data: [DONE] are suppressed; the next round's events follow
//     on the same response, with their completion id replaced by the first
//     round's, so the client reads one completion. The final round's
//     [DONE] is relayed. With stream_options.include_usage the final usage
//     chunk carries the last round's usage.
//   - Headers go out with the first event, before the round limit can be
//     known. The proxy therefore declares HTTP trailers X-Skillrouter-Tool-Rounds
//     and X-Skillrouter-Tool-Rounds-Exhausted and sets them when the stream
//     ends, and, the moment the final round turns out to call its tools
//     again, writes the SSE comment ": skillrouter: tool rounds exhausted ..."
//     (ignored by SDKs, visible with curl -N).
//   - An upstream failure after the stream started (a later round answers
//     4xx/5xx, times out, breaks, or sends an event whose data is not JSON)
//     cannot change the status any more: it becomes a final error event in
//     the API's shape (Chat data: {"error":{...}}, Responses and Messages
//     event: error), which the SDKs raise, and the request is logged at WARN
//     and counted with outcome stream_error.
//
// Requests with n > 1 skip the tool loop (the proxy's calls reach the client
// as they are). Without a ToolSession (rewrite failed or disabled) the stream
// is relayed event by event, byte for byte, minus lines that are not SSE
// fields (dropped and counted); it too ends with the API's error event when
// it breaks.
//
// # Access, timeouts, shutdown
//
// Config.Access checks every request (and handlers wrapped with Protect):
// browser origins, Host names, client keys, the admin token, the request
// body's read deadline (guard.go). Upstream exchanges are bounded by a
// connect, a header and an idle timeout, and non-streaming ones by
// UpstreamTimeout (upstream.go). Drain ends what is still in flight when a
// shutdown grace is over (drain.go).
package proxy
