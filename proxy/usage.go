package proxy

import (
	"bytes"
	"context"
	"net/http"
)

// usageAsker is implemented by requests whose rewrite may ask the upstream
// for usage the client did not ask for (Chat streams with an output-token
// cap, see chat.Request.Render).
type usageAsker interface {
	// AskedUsage reports whether the rewrite asked.
	AskedUsage() bool
	// UsageAskRefused reports whether refusal, an upstream's error body,
	// plausibly refuses the ask (it names it).
	UsageAskRefused(refusal []byte) bool
	// WithoutUsageAsk returns body with the client's stream_options as
	// sent, and false when the rewrite asked for nothing.
	WithoutUsageAsk(body []byte) ([]byte, bool)
}

// sendInstead sends next, a first round rewritten after resp's refusal, in
// resp's place (its Idempotency-Key marked with tag, see resent), and
// closes resp once next got an answer; nil when the send failed, and resp
// stands.
func (s *Server) sendInstead(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, next []byte, tag string, kind exchange, info *reqInfo) *http.Response {
	retry, elapsed, err := s.send(ctx, rt.api.target(s), resent(in, tag), bytes.NewReader(next), int64(len(next)), true, kind)
	s.metrics.observeUpstream(info, elapsed)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	return retry
}

// isRefusal reports whether resp refuses the request as sent: 400, or 422
// from servers that validate it (FastAPI, pydantic).
func isRefusal(resp *http.Response) bool {
	return resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity
}

// refusalPeek bounds how much of a refusal is read to tell whether it
// names the ask: error bodies are small, and one that names a parameter
// does so near its start.
const refusalPeek = 64 << 10

// resendWithoutUsageAsk handles the upstream's refusal (400, or 422 from
// servers that forbid unknown fields) of the first round of a request the
// proxy asked for usage in: a server that does not take stream_options
// (Azure's older API versions: "Unrecognized request argument supplied:
// stream_options") refuses what it took before the ask. Only a refusal
// that names the ask is taken for one (chat.Request.UsageAskRefused): any
// other (a context too long, a bad model name) is the client's request's,
// and sending it again would double it upstream, so it goes back at once.
// The request is sent once more as the rewrite made it without the ask,
// and its answer is the one to go on with, accepted or refused: the client
// gets what it got before the proxy asked (hidden rounds then take nothing
// from the cap, as a stream without usage does). When that send fails,
// resp's refusal goes back as it came.
func (s *Server) resendWithoutUsageAsk(ctx context.Context, rt *routed, in *http.Request, resp *http.Response, body []byte, info *reqInfo) (*http.Response, []byte) {
	ua, ok := rt.req.(usageAsker)
	if !ok || !ua.AskedUsage() || !isRefusal(resp) {
		return resp, body
	}
	if !ua.UsageAskRefused(peekBody(resp, refusalPeek)) {
		return resp, body
	}
	next, ok := ua.WithoutUsageAsk(body)
	if !ok {
		return resp, body
	}
	outcome := func(o string) { s.metrics.usageAskResent.WithLabelValues(o).Inc() }
	retry := s.sendInstead(ctx, rt, in, resp, next, "without-usage", exchangeStream, info)
	if retry == nil {
		outcome("failed")
		return resp, body
	}
	if retry.StatusCode/100 == 2 {
		outcome("accepted")
	} else {
		outcome("refused") // for another reason: relayed as before the ask
	}
	return retry, next
}
