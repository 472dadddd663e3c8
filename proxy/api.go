package proxy

import (
	"encoding/json"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/chat"
	"github.com/skillrouter/skillrouter/wire/messages"
	"github.com/skillrouter/skillrouter/wire/responses"
)

// api is one client API's wire format as the proxy drives it: the endpoint
// handlers and the tool loop are the same for every API; everything that
// knows a format lives behind this interface, in the wire/* packages.
type api interface {
	name() wire.API
	// parse validates and parses a request body once; client errors are
	// *wire.Error.
	parse(body []byte) (apiRequest, error)
	// errorJSON renders an error the proxy gives, in the API's envelope.
	errorJSON(e *wire.Error) []byte
	// target says where the API's upstream is and how it authenticates.
	target(s *Server) *upstreamTarget
	// reportedUsage is the usage an answer after tool rounds reports (see
	// wire.Usage): the last round's, in the API's form.
	reportedUsage(u *wire.Usage) json.RawMessage
}

// apiRequest is one parsed request of an API.
type apiRequest interface {
	View() *wire.Request
	Body() []byte
	// Render splices a plan into the client's bytes.
	Render(p *wire.Plan) ([]byte, error)
	// ReadAnswer reads a non-streaming answer of round: usage, and the
	// proxy's calls (nil Answer when there are none); ok is false when the
	// body is not an answer of the API.
	ReadAnswer(raw []byte, round int, mine func(name string) bool) (ans *wire.Answer, usage json.RawMessage, ok bool)
	// Final patches the answer the client gets after rounds tool rounds:
	// the usage to report (non-nil; api.reportedUsage), the proxy's calls stripped (strip non-nil),
	// the request's echoes made the client's (when Echoes).
	Final(raw []byte, rounds int, usage json.RawMessage, strip func(name string) bool) ([]byte, error)
	// Echoes reports whether the API's answers echo parts of the request
	// that the rewrite changed (Responses: instructions, tools), which
	// Final puts back as the client sent them, even after no tool round.
	Echoes() bool
	// FollowUp builds the next round's request from the current one.
	FollowUp(body []byte, ans *wire.Answer, results []wire.ToolResult, ts wire.ToolSet) ([]byte, error)
	// Spent reports, before the round's calls are run, whether too little
	// of the client's output-token cap is left after ans for a follow-up
	// (wire.ErrBudgetSpent); when so, Final ends the answer at that cap.
	// The calls are then not run: nothing would read their results.
	Spent(ans *wire.Answer) bool
	// NewStream translates a streamed answer round after round.
	NewStream(mine func(name string) bool) apiStream
	// Events renders a whole answer (what a request that is not streamed
	// gets) as the events of the stream that carries it, for the
	// translator: an upstream that ignores stream:true answers with one.
	// An error when raw is not an answer of the API.
	Events(raw []byte) ([]byte, error)
}

// apiStream translates the upstream's events of one streamed request.
type apiStream interface {
	// Round starts an upstream round; final: no further round is allowed.
	Round(final bool)
	// Event translates one upstream event, appending the client's bytes to
	// out; false: the round's stream is over.
	Event(ev *wire.Event, out []byte) ([]byte, bool)
	// End settles the round when its stream ended.
	End(out []byte) ([]byte, wire.RoundEnd)
	// ErrorEvent renders an error as the stream's final event.
	ErrorEvent(e *wire.Error) []byte
	// Relayed notes an event passed on without Event (a stream without
	// the proxy's tools), so that a later ErrorEvent follows on from it,
	// and reports whether the event ends the API's stream.
	Relayed(ev *wire.Event) (final bool)
	// UpstreamErrorEvent turns an upstream error answer met after the
	// stream started into its final event, and the message for the log.
	UpstreamErrorEvent(status int, raw []byte, round int) ([]byte, string)
	// Preamble reports whether out (translated events) holds only what
	// opens a stream: nothing the client reads yet.
	Preamble(out []byte) bool
	// Failure reports the message of the upstream error an event of the
	// stream carried, "" when none did.
	Failure() string
	// TotalUsage is every round's usage summed (what the request cost;
	// the client is told the last round's), null when none came.
	TotalUsage() json.RawMessage
}

// chatAPI is OpenAI Chat Completions (package wire/chat).
type chatAPI struct{}

func (chatAPI) name() wire.API { return wire.APIChat }

func (chatAPI) parse(body []byte) (apiRequest, error) {
	r, err := chat.Parse(body)
	if err != nil {
		return nil, err
	}
	return chatRequest{r}, nil
}

func (chatAPI) errorJSON(e *wire.Error) []byte   { return chat.ErrorJSON(e) }
func (chatAPI) target(s *Server) *upstreamTarget { return &s.openai }

func (chatAPI) reportedUsage(u *wire.Usage) json.RawMessage { return u.Last() }

// chatRequest adapts *chat.Request.
type chatRequest struct{ *chat.Request }

func (r chatRequest) Final(raw []byte, _ int, usage json.RawMessage, strip func(string) bool) ([]byte, error) {
	return r.Request.Final(raw, usage, strip)
}

func (r chatRequest) NewStream(mine func(string) bool) apiStream { return r.Request.NewStream(mine) }

// Events: the usage chunk only with stream_options.include_usage, as the API streams it.
func (r chatRequest) Events(raw []byte) ([]byte, error) {
	// Usage the proxy asked for counts against the cap; the translator hides it.
	return chat.Events(raw, r.IncludeUsage() || r.AskedUsage())
}

// Echoes: a chat completion echoes nothing of the request but the model.
func (chatRequest) Echoes() bool { return false }

// responsesAPI is OpenAI Responses (package wire/responses).
type responsesAPI struct{}

func (responsesAPI) name() wire.API { return wire.APIResponses }

func (responsesAPI) parse(body []byte) (apiRequest, error) {
	r, err := responses.Parse(body)
	if err != nil {
		return nil, err
	}
	return responsesRequest{r}, nil
}

func (responsesAPI) errorJSON(e *wire.Error) []byte   { return responses.ErrorJSON(e) }
func (responsesAPI) target(s *Server) *upstreamTarget { return &s.openai }

func (responsesAPI) reportedUsage(u *wire.Usage) json.RawMessage { return u.Last() }

// responsesRequest adapts *responses.Request.
type responsesRequest struct{ *responses.Request }

// ReadAnswer also notes what the round used of the client's limits (see
// responses.Used).
func (r responsesRequest) ReadAnswer(raw []byte, round int, mine func(string) bool) (*wire.Answer, json.RawMessage, bool) {
	ans, u, ok := r.Request.ReadAnswer(raw, round, mine)
	if ans != nil {
		responses.Used(ans, raw)
	}
	return ans, u, ok
}

func (r responsesRequest) NewStream(mine func(string) bool) apiStream {
	return r.Request.NewStream(mine)
}

func (responsesRequest) Events(raw []byte) ([]byte, error) { return responses.Events(raw) }

// messagesAPI is Anthropic Messages (package wire/messages); it also
// serves /v1/messages/count_tokens, whose body is a messages request
// without max_tokens: counted as rewritten, so the count matches what a
// messages request with the same body sends upstream.
type messagesAPI struct{}

func (messagesAPI) name() wire.API { return wire.APIMessages }

func (messagesAPI) parse(body []byte) (apiRequest, error) {
	r, err := messages.Parse(body)
	if err != nil {
		return nil, err
	}
	return messagesRequest{r}, nil
}

func (messagesAPI) errorJSON(e *wire.Error) []byte   { return messages.ErrorJSON(e) }
func (messagesAPI) target(s *Server) *upstreamTarget { return &s.anthropic }

func (messagesAPI) reportedUsage(u *wire.Usage) json.RawMessage { return messages.ReportedUsage(u) }

// messagesRequest adapts *messages.Request.
type messagesRequest struct{ *messages.Request }

func (r messagesRequest) NewStream(mine func(string) bool) apiStream {
	return r.Request.NewStream(mine)
}

func (messagesRequest) Events(raw []byte) ([]byte, error) { return messages.Events(raw) }

// Echoes: a message echoes nothing of the request but the model.
func (messagesRequest) Echoes() bool { return false }
