package proxy

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/skillrouter/skillrouter/internal/redact"
	"github.com/skillrouter/skillrouter/wire"
)

// upstreamTarget is one upstream API: its base URL (with its version
// prefix, e.g. http://127.0.0.1:11434/v1) and how the proxy authenticates
// when the client does not.
type upstreamTarget struct {
	base         *url.URL
	apiKey       string
	keyHeader    string // "Authorization" (sent as Bearer) or "X-Api-Key"
	overrideAuth bool
	hops         []string // the earlier hops' headers kept from it (earlierHops less Config.ForwardHeaders)
}

// url maps a client path under /v1 to the target's base URL; a path that
// would leave the base (see confine.go) is an error. The client's query is
// kept as it came; the base URL's parameters the client does not set are
// added to it (a gateway that wants ?api-version=... on every request, as
// the upstream check sends it too).
func (t *upstreamTarget) url(clientPath, rawQuery string) (string, error) {
	u := *t.base
	u.Path = t.base.Path + strings.TrimPrefix(clientPath, "/v1")
	if !strings.HasPrefix(clientPath, "/v1/") && clientPath != "/v1" || !within(u.Path, t.base.Path) {
		return "", errOutsideBase
	}
	u.RawQuery = withBaseQuery(rawQuery, t.base.RawQuery)
	return u.String(), nil
}

// withBaseQuery adds to the client's raw query the parameters of base it
// does not have, in base's order.
func withBaseQuery(client, base string) string {
	if base == "" {
		return client
	}
	have, _ := url.ParseQuery(client)
	out := client
	for kv := range strings.SplitSeq(base, "&") {
		k, _, _ := strings.Cut(kv, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k // sent as written, as the upstream check sends it
		}
		if kv == "" || have.Has(name) {
			continue
		}
		if out != "" {
			out += "&"
		}
		out += kv
	}
	return out
}

// header builds the upstream request headers from the client's.
func (t *upstreamTarget) header(in http.Header) http.Header {
	out := upstreamRequestHeader(in, t.hops)
	if t.apiKey == "" || t.keepsClientKey(in) {
		return out
	}
	if t.keyHeader == "X-Api-Key" {
		out.Del("Authorization")
		out.Set("X-Api-Key", t.apiKey)
		return out
	}
	out.Set("Authorization", "Bearer "+t.apiKey)
	return out
}

// keepsClientKey reports whether a request with these headers goes upstream
// with the client's own key although the target has one configured: it
// does unless override_auth is set. Anthropic clients authenticate with
// either header (Claude Code: x-api-key for API keys, Authorization for
// tokens).
func (t *upstreamTarget) keepsClientKey(in http.Header) bool {
	if t.apiKey == "" || t.overrideAuth {
		return false
	}
	own := in.Get("Authorization") != ""
	if t.keyHeader == "X-Api-Key" {
		own = own || in.Get("X-Api-Key") != ""
	}
	return own
}

// exchange says which timeouts bound an upstream exchange.
type exchange int

const (
	// exchangeAnswer is a non-streaming model request: the headers come
	// with the whole answer, so headers and body are bounded together by
	// UpstreamTimeout.
	exchangeAnswer exchange = iota
	// exchangeStream is a streamed model request: the headers within
	// HeaderTimeout, then at most IdleTimeout between two reads of the
	// body, and no bound on the whole: a healthy stream may run for hours.
	exchangeStream
	// exchangePass is a pass-through request, streamed or not, which the
	// proxy does not read: headers within UpstreamTimeout, then at most
	// IdleTimeout between reads.
	exchangePass
)

// send performs one upstream exchange bounded as kind says. The caller
// must close the response body; closing it also releases the timers.
// decoded asks for an identity (or transparently decoded) body, which the
// routed paths need to parse it; pass-through relays the encoding untouched.
func (s *Server) send(ctx context.Context, t *upstreamTarget, in *http.Request, body io.Reader, length int64, decoded bool, kind exchange) (*http.Response, time.Duration, error) {
	target, err := t.url(in.URL.Path, in.URL.RawQuery)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	b := &boundedBody{cancel: cancel, idle: s.cfg.IdleTimeout, idleKey: "upstream.idle_timeout"}
	phase, wait, key := phaseHeaders, s.cfg.UpstreamTimeout, "upstream.timeout"
	switch kind {
	case exchangeStream:
		wait, key = s.cfg.HeaderTimeout, "upstream.header_timeout"
	case exchangeAnswer:
		phase = phaseAnswer
	}
	// The error is made only if the timer fires: most exchanges end first.
	headers := time.AfterFunc(wait, func() { cancel(&timeoutError{phase: phase, after: wait, key: key}) })
	if kind == exchangeAnswer {
		// The whole exchange, body included, within UpstreamTimeout.
		b.total = headers
		headers = nil
	}
	req, err := http.NewRequestWithContext(ctx, in.Method, target, body)
	if err != nil {
		b.release()
		return nil, 0, err
	}
	req.Header = t.header(in.Header)
	req.Header.Add("Via", via)
	req.ContentLength = length
	if length == 0 && body != nil && body != http.NoBody {
		req.ContentLength = -1
	}
	if decoded {
		// Let the Transport negotiate gzip and decode it for us.
		req.Header.Del("Accept-Encoding")
		req.Header.Set("Content-Type", "application/json")
	}
	if s.cfg.ModifyRequest != nil {
		s.cfg.ModifyRequest(req)
	}
	start := time.Now()
	resp, err := s.transport.RoundTrip(req)
	elapsed := time.Since(start)
	if headers != nil {
		headers.Stop()
	}
	if err != nil {
		err = withCause(ctx, err)
		b.release()
		return nil, elapsed, &upstreamError{name: t.base.Host, err: err}
	}
	b.ctx, b.ReadCloser, b.name = ctx, resp.Body, t.base.Host
	resp.Body = b
	if resp.StatusCode >= 400 {
		if secrets := t.secrets(in.Header); len(secrets) > 0 {
			resp.Body = withKeyMasked(resp, secrets)
		}
	}
	if s.cfg.ModifyResponse != nil {
		if err := s.cfg.ModifyResponse(resp); err != nil {
			resp.Body.Close()
			return nil, elapsed, errModifyResponse{err}
		}
	}
	return resp, elapsed, nil
}

// secrets are the operator's credentials an upstream error answer to a
// request with header h must not show its client: the key, when the proxy
// sent it, and what the base URL carries with every request, a password
// or a credential-named query value (?api-key=: an error page quoting the
// URL it refused shows it). URL-borne values under 8 bytes are left
// alone: masked, every such run of text in the body would be starred.
func (t *upstreamTarget) secrets(h http.Header) []string {
	var out []string
	if t.apiKey != "" && !t.keepsClientKey(h) {
		out = append(out, t.apiKey)
	}
	add := func(v string) {
		if len(v) >= 8 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if p, ok := t.base.User.Password(); ok {
		add(p)
	}
	for kv := range strings.SplitSeq(t.base.RawQuery, "&") {
		if k, v, _ := strings.Cut(kv, "="); redact.SecretKey(k) {
			add(v)
			if dec, err := url.QueryUnescape(v); err == nil {
				add(dec)
			}
		}
	}
	return out
}

// withKeyMasked is the body of an upstream error answer with each of keys
// (see secrets) masked where the body repeats it: some gateways quote the
// credential they refused ("Incorrect API key provided: Bearer sk-..."),
// and the operator's credentials are never the clients'. The mask keeps a
// key's length (Content-Length stays right) and its first three and last
// four characters, as OpenAI quotes keys. A compressed body is decoded and
// goes plain; one in a coding the proxy does not decode (br), and what
// lies past the first MiB, go as they are.
func withKeyMasked(resp *http.Response, keys []string) io.ReadCloser {
	body := resp.Body // the caller replaces resp.Body with what this returns
	src, done := io.Reader(body), func() {}
	if enc := contentCoding(resp.Header); enc != "" && enc != "identity" {
		// Pass-through relays the encoding the client accepted: an error
		// it compressed is decoded here, and goes to the client plain.
		dec, release, err := newDecoder(enc, body, 8<<20)
		if err != nil {
			return body // a coding the proxy does not know (br): as it came
		}
		src, done = dec, release
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	head, err := io.ReadAll(io.LimitReader(src, 1<<20))
	masked := head
	for _, key := range keys {
		masked = bytes.ReplaceAll(masked, []byte(key), []byte(maskedKey(key)))
	}
	rest := src
	if err != nil {
		rest = errReader{err}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(masked), rest), closerFunc(func() error { done(); return body.Close() })}
}

// closerFunc is a func as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// maskedKey is key with all but its first three and last four characters
// starred (all of it when it is short).
func maskedKey(key string) string {
	if len(key) < 12 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type errModifyResponse struct{ error }

func (e errModifyResponse) Unwrap() error { return e.error }

// timeoutError is an upstream exchange cut by one of the proxy's timeouts;
// its message names the setting, so that whoever reads it knows which one
// to raise.
type timeoutError struct {
	phase string
	after time.Duration
	key   string // the configuration key that set after
}

const (
	phaseHeaders = "sent no response headers"
	phaseAnswer  = "sent no whole answer" // headers and body, one bound
	phaseIdle    = "sent nothing more"
)

func (e *timeoutError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("upstream %s within %s", e.phase, e.after)
	}
	return fmt.Sprintf("upstream %s within %s (%s)", e.phase, e.after, e.key)
}
func (e *timeoutError) Timeout() bool { return true }

// withCause replaces the context error of an exchange the proxy cut with
// the timeout that cut it. Over HTTP/1 the transport reports the context's
// cause, over HTTP/2 context.Canceled: either way the error reads as the
// timeout alone, with the transport's error underneath for errors.Is and
// As. An error of its own (a reset) keeps its text after the timeout's.
func withCause(ctx context.Context, err error) error {
	var te *timeoutError
	if errors.As(context.Cause(ctx), &te) && !errors.As(err, &te) {
		if errors.Is(err, context.Canceled) || strings.Contains(err.Error(), te.Error()) {
			return &causedError{te, err}
		}
		return fmt.Errorf("%w (%w)", te, err)
	}
	return err
}

// causedError is a timeout and the error it caused, read as the timeout.
type causedError struct {
	cause *timeoutError
	err   error
}

func (e *causedError) Error() string   { return e.cause.Error() }
func (e *causedError) Unwrap() []error { return []error{e.cause, e.err} }

// upstreamError is an error of an exchange with one upstream, named by its
// host (never its URL: the path or query may hold secrets, and no
// credentials), so a client learns which upstream failed.
type upstreamError struct {
	name string
	err  error
}

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// upstreamName is "upstream HOST" for an error of a named upstream, else "upstream".
func upstreamName(err error) string {
	var ue *upstreamError
	if errors.As(err, &ue) && ue.name != "" {
		return "upstream " + ue.name
	}
	return "upstream"
}

// boundedBody is an upstream response body under the exchange's timers:
// the idle timer runs while a Read waits for the upstream (not while the
// proxy writes to its client); total bounds a non-streaming exchange.
// Closing it stops the timers and releases the exchange's context.
type boundedBody struct {
	io.ReadCloser
	ctx     context.Context
	cancel  context.CancelCauseFunc
	idle    time.Duration
	idleKey string // the setting idle comes from, for the timeout's message
	timer   *time.Timer
	total   *time.Timer
	name    string // the upstream's host, for errors
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.idle > 0 {
		if b.timer == nil {
			d, key := b.idle, b.idleKey
			b.timer = time.AfterFunc(d, func() { b.cancel(&timeoutError{phase: phaseIdle, after: d, key: key}) })
		} else {
			b.timer.Reset(b.idle)
		}
	}
	n, err := b.ReadCloser.Read(p)
	if b.timer != nil {
		b.timer.Stop()
	}
	if err != nil && err != io.EOF { // io.EOF is compared with ==, never wrapped
		err = &upstreamError{name: b.name, err: withCause(b.ctx, err)}
	}
	return n, err
}

// graceIdle lowers the idle bound to d for the rest of the body (reads are
// sequential: no lock).
func (b *boundedBody) graceIdle(d time.Duration) {
	if b.idle <= 0 || d < b.idle {
		b.idle, b.idleKey = d, "" // the grace is no setting
		if b.timer != nil {       // the next Read starts one with d
			b.timer.Stop()
			b.timer = nil
		}
	}
}

func (b *boundedBody) Close() error {
	var err error
	if b.ReadCloser != nil {
		err = b.ReadCloser.Close()
	}
	b.release()
	return err
}

func (b *boundedBody) release() {
	if b.timer != nil {
		b.timer.Stop()
	}
	if b.total != nil {
		b.total.Stop()
	}
	b.cancel(nil)
}

// failure classifies an upstream exchange error: the client went away (499,
// nothing to write), the upstream timed out (504), closed the connection
// without a (whole) response (502) or could not be reached (502).
type failure struct {
	status int
	code   string
	msg    string // for the client: the upstream's host, never its URL
	detail string // for the log: the error as it is
}

func classify(clientCtx context.Context, err error) failure {
	if errors.Is(context.Cause(clientCtx), errShutdown) {
		return shutdownFailure()
	}
	if clientCtx.Err() != nil {
		return failure{status: statusClientClosed, code: "client_closed", msg: "client closed the request"}
	}
	if errors.Is(err, errOutsideBase) {
		return failure{status: http.StatusBadRequest, code: "invalid_path", msg: err.Error()}
	}
	var mr errModifyResponse
	if errors.As(err, &mr) {
		return failure{status: http.StatusBadGateway, code: "upstream_response_rejected", msg: "upstream response rejected: " + mr.Error()}
	}
	f := classifyUpstream(err)
	f.detail = err.Error()
	return f
}

// redirected reports an upstream redirect of a routed request as a
// failure: relaying it would hand the client the upstream's internal
// address (and any token in it), and a client that follows it bypasses the
// proxy. The log gets where it pointed; the client, only its host.
func redirected(resp *http.Response) (failure, bool) {
	if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return failure{}, false
	}
	loc, _ := resp.Location()
	f := failure{status: http.StatusBadGateway, code: "upstream_redirect",
		msg: fmt.Sprintf("upstream answered %d, a redirect: set upstream.url to the address it points to", resp.StatusCode)}
	if loc != nil {
		f.msg += " (host " + loc.Host + ")"
		// Scheme, host and path only: a redirect's query (a sign-in
		// token, a presigned URL's signature) is a credential.
		where := url.URL{Scheme: loc.Scheme, Host: loc.Host, Path: loc.Path}
		f.detail = "Location: " + where.String()
		if loc.RawQuery != "" {
			f.detail += "?…"
		}
	}
	return f, true
}

// notAnAnswer reports a 200 that is not an answer of the kind asked for: a
// body that is not JSON to a request that is not streamed (an HTML sign-in
// page, half an answer that ended cleanly), or an event stream to it, or a
// streamed request answered with neither an event stream nor what looks
// like JSON (raw is then the body's first bytes: an upstream that ignores
// stream:true may label its JSON text/plain). For a request that is not
// streamed, raw is the body, or nil when it was read as an answer already
// (it is JSON then). Relayed, it would read as a success the client cannot
// use; an event stream may even carry the proxy's own calls.
func notAnAnswer(resp *http.Response, stream bool, raw []byte) (failure, bool) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	bad := func(what string) (failure, bool) {
		return failure{status: http.StatusBadGateway, code: "upstream_bad_response",
			msg: fmt.Sprintf("upstream answered 200 with %s, not the API's answer", what)}, true
	}
	switch {
	case stream && mt != "text/event-stream" && !looksJSON(raw):
		return bad(contentTypeName(mt))
	case !stream && mt == "text/event-stream":
		return bad("an event stream to a request that did not ask for one")
	case !stream && raw != nil && !json.Valid(raw):
		return bad(contentTypeName(mt) + " that is not whole JSON")
	}
	return failure{}, false
}

// looksJSON: the first byte that is not white space opens an object or array.
func looksJSON(prefix []byte) bool {
	p := bytes.TrimLeft(prefix, " \t\r\n")
	return len(p) > 0 && (p[0] == '{' || p[0] == '[')
}

func contentTypeName(mt string) string {
	if mt == "" {
		return "a body without a Content-Type"
	}
	return mt
}

// peekBody returns up to n first bytes of resp's body, which stays whole
// for whoever reads it next.
func peekBody(resp *http.Response, n int) []byte {
	br := bufio.NewReaderSize(resp.Body, n)
	p, _ := br.Peek(n)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	return p
}

// answerReadError is an error met reading the body of an answer whose
// headers came.
type answerReadError struct{ err error }

func (e *answerReadError) Error() string { return e.err.Error() }
func (e *answerReadError) Unwrap() error { return e.err }

func classifyUpstream(err error) failure {
	who := upstreamName(err)
	var te *timeoutError
	if errors.As(err, &te) {
		return failure{status: http.StatusGatewayTimeout, code: "upstream_timeout", msg: who + " timed out: " + te.Error()}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && oe.Timeout() {
		return failure{status: http.StatusGatewayTimeout, code: "upstream_timeout", msg: who + " timed out: could not connect"}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return failure{status: http.StatusGatewayTimeout, code: "upstream_timeout", msg: who + " timed out"}
	}
	// The answer's headers came: whatever broke its body, the upstream was
	// reached (an HTTP/2 reset is a stream error, not ECONNRESET).
	var re *answerReadError
	answered := errors.As(err, &re)
	var corrupt flate.CorruptInputError
	if answered && (errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &corrupt)) {
		return failure{status: http.StatusBadGateway, code: "upstream_bad_response", msg: who + " sent an answer its Content-Encoding does not decode"}
	}
	// Reached, then hung up: net/http says no more than "EOF".
	switch {
	case errors.As(err, &oe) && oe.Op == "dial": // never reached: unreachable, below
	case errors.Is(err, io.EOF):
		return failure{status: http.StatusBadGateway, code: "upstream_connection_closed", msg: who + " closed the connection without a response"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return failure{status: http.StatusBadGateway, code: "upstream_connection_closed", msg: who + " closed the connection before the end of its response"}
	case errors.Is(err, syscall.ECONNRESET):
		return failure{status: http.StatusBadGateway, code: "upstream_connection_closed", msg: who + " reset the connection"}
	}
	if answered {
		return failure{status: http.StatusBadGateway, code: "upstream_connection_closed", msg: who + " broke off its answer"}
	}
	return failure{status: http.StatusBadGateway, code: "upstream_unreachable", msg: who + " unreachable" + cause(err)}
}

// cause is the innermost reason of a connection error without the URL or
// address net/http wraps it in (the message names the upstream by its host
// already): ": connection refused", ": no such host"; "" when unknown.
func cause(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return ": " + dns.Err
	}
	var sys syscall.Errno
	if errors.As(err, &sys) {
		return ": " + sys.Error()
	}
	return ""
}

// logText is what the access log records: the full error when there is
// one and the client's message does not already end with it.
func (f failure) logText() string {
	if f.detail != "" && !strings.HasSuffix(f.msg, f.detail) {
		return f.msg + " (" + f.detail + ")"
	}
	return f.msg
}

// classifyStream classifies an error met while relaying a stream that had
// started: the upstream was reached, so what classify calls unreachable is a
// failure of the stream itself.
func classifyStream(clientCtx context.Context, err error) failure {
	var me *malformedError
	if errors.As(err, &me) && clientCtx.Err() == nil {
		return failure{status: http.StatusBadGateway, code: "upstream_malformed_event", msg: err.Error(), detail: err.Error()}
	}
	if errors.Is(err, wire.ErrEventTooLarge) && clientCtx.Err() == nil {
		return failure{status: http.StatusBadGateway, code: "upstream_response_too_large", msg: err.Error(), detail: err.Error()}
	}
	f := classify(clientCtx, err)
	if f.code == "upstream_unreachable" {
		f.code, f.msg = "upstream_stream_error", upstreamName(err)+" stream failed"+cause(err)
	}
	return f
}

// write sends the failure in a's error envelope, unless the client is gone.
func (f failure) write(w http.ResponseWriter, a api) {
	writeError(w, a, &wire.Error{Status: f.status, Kind: f.kind(), Code: f.code, Message: f.msg})
}

// kind is the error's kind for the client's envelope: the proxy's own
// shutdown is the server's (OpenAI "server_error"), not the upstream's.
func (f failure) kind() wire.Kind {
	switch {
	case f.code == codeShutdown:
		return wire.KindServer
	case f.status < 500:
		return wire.KindInvalidRequest
	}
	return wire.KindUpstream
}
