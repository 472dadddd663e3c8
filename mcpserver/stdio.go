package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// The SDK's stdio connection ends the session on the first line it cannot
// decode: a host that sends one bad message (or a JSON-RPC batch, which
// MCP no longer has) loses the skill server, and answers to what it sent
// before are never written. JSON-RPC 2.0 (§5.1) answers such a message
// with an error and goes on; stdio frames are single lines (MCP's stdio
// transport), so each line is checked before the SDK reads it, and a bad
// one is answered here.

// RunStdio serves one session on stdin/stdout until the client disconnects
// or ctx ends.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.runIO(ctx, os.Stdin, os.Stdout)
}

// runIO serves one session on in and out, newline-delimited JSON-RPC.
func (s *Server) runIO(ctx context.Context, in io.Reader, out io.Writer) error {
	s.activate()
	w := &lockedWriter{w: out, pending: newPending()}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		err := filterFrames(in, pw, filterAnswers{w}, w.pending, &w.version)
		if err == nil {
			// stdin ended: a host that writes its requests and closes
			// (`printf ... | router mcp`, or a shutdown right after a call)
			// gets the answers still being worked on before the SDK sees
			// the end, which ends the session and drops them.
			w.pending.drain(done, drainLimit)
		}
		_ = pw.CloseWithError(err)
	}() // ends with in, or when pr closes
	err := s.srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: w})
	close(done)
	_ = pr.Close() // a filter still writing gets io.ErrClosedPipe and stops
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// drainLimit bounds how long the end of stdin waits for answers still
// being worked on: MCP's stdio shutdown has the host wait for the server
// to exit, then signal it.
const drainLimit = 30 * time.Second

// lockedWriter serialises whole messages: the SDK writes each with one
// Write, and so does filterFrames. It notes the responses that go out, and
// the protocol version the session's initialize agreed on.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending *pending
	version agreed
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		return l.w.Write(p)
	}
	msg := gjson.ParseBytes(p) // read once for both notes
	if l.pending.cancelledAnswer(msg) {
		// MCP: the receiver of notifications/cancelled does not answer the
		// request it names (the SDK answers every request it handled).
		return len(p), nil
	}
	size := len(p)
	if b, ok := notInitializedAnswer(msg); ok {
		p = b
	}
	n, err := l.w.Write(p)
	if err == nil {
		n = size
	}
	eachOf(msg, func(m gjson.Result) {
		if v := m.Get("id"); !m.Get("method").Exists() && v.Exists() {
			l.pending.answered(v)
			l.version.answered(v, m)
		}
	})
	return n, err
}

// notInitialized answers a request sent before the session's initialize.
const notInitialized = "invalid request: the session is not initialized: send an initialize request first (then notifications/initialized); only ping may come before it"

// notInitializedAnswer rewrites the SDK's refusal of a request sent before
// initialize, which has error code 0 (JSON-RPC has no such code), as
// -32600 Invalid Request, as other MCP SDKs answer it. The SDK stays the
// judge of what comes too early: its exceptions (ping; requests of the
// stateless protocol, which have no initialize) are its own.
func notInitializedAnswer(m gjson.Result) ([]byte, bool) {
	v := m.Get("error")
	if !m.IsObject() || m.Get("method").Exists() || !v.Exists() || v.Get("code").Type != gjson.Number || v.Get("code").Int() != 0 ||
		!strings.HasSuffix(v.Get("message").Str, "is invalid during session initialization") {
		return nil, false
	}
	var b bytes.Buffer
	_ = answer(&b, json.RawMessage(m.Get("id").Raw), jsonrpc.CodeInvalidRequest, notInitialized)
	return b.Bytes(), true
}

// agreed is the protocol version the server answered initialize with: the
// SDK's, which is not the client's when the client asked for one the SDK
// does not speak, and which a second initialize (refused) does not change.
type agreed struct {
	mu      sync.Mutex
	v       string
	pending chan struct{} // an initialize went to the SDK, unanswered; closed by answered
	id      string        // its id (idKey)
}

// answered notes the answer m (id id) to the pending initialize: its
// version, or, refused (bad params), none, so that the client may try again.
func (a *agreed) answered(id gjson.Result, m gjson.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil || idKey(id) != a.id {
		return
	}
	if r := m.Get("result"); r.Get("serverInfo").Exists() {
		a.v = r.Get("protocolVersion").Str
	}
	close(a.pending)
	a.pending = nil
}

func (a *agreed) get() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.v
}

// begun reports whether an initialize went to the SDK already.
func (a *agreed) begun() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.v != "" || a.pending != nil
}

// alreadyInitialized answers a second initialize in a session.
const alreadyInitialized = "invalid request: the session is initialized already; a new one needs a new connection (stdio: a new process; HTTP: a POST without Mcp-Session-Id)"

// asked notes an initialize (id id) passed to the SDK before any was
// answered.
func (a *agreed) asked(id gjson.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v == "" && a.pending == nil {
		a.pending, a.id = make(chan struct{}), idKey(id)
	}
}

// await is the agreed version, waiting up to limit for the answer to an
// initialize the SDK has (a client that sends a batch right after its
// initialize, without waiting for the answer, is judged by its version).
func (a *agreed) await(limit time.Duration) string {
	a.mu.Lock()
	v, pending := a.v, a.pending
	a.mu.Unlock()
	if pending == nil {
		return v
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-pending:
	case <-t.C:
	}
	return a.get()
}

// eachMessage calls f with each message of a frame: the one, or a batch's.
func eachMessage(frame []byte, f func(gjson.Result)) { eachOf(gjson.ParseBytes(frame), f) }

// eachOf is eachMessage of a frame already parsed.
func eachOf(r gjson.Result, f func(gjson.Result)) {
	if r.IsArray() {
		r.ForEach(func(_, el gjson.Result) bool { f(el); return true })
	} else {
		f(r)
	}
}

// pending holds the ids of the client's requests not answered yet, and
// those of them the client cancelled.
type pending struct {
	mu        sync.Mutex
	ids       map[string]bool
	cancelled map[string]bool
	changed   chan struct{} // closed and replaced when ids shrinks
}

func newPending() *pending {
	return &pending{ids: map[string]bool{}, cancelled: map[string]bool{}, changed: make(chan struct{})}
}

// cancelledAnswer reports whether m, a frame, is the answer to a request
// the client cancelled before it was answered (one message, not a batch's).
func (p *pending) cancelledAnswer(m gjson.Result) bool {
	id := m.Get("id")
	if !m.IsObject() || m.Get("method").Exists() || !id.Exists() {
		return false
	}
	key := idKey(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cancelled[key] {
		return false
	}
	delete(p.cancelled, key)
	return true
}

// idKey is an id as requests and answers both write it: the SDK turns a
// numeric id into an integer (2.0 and 2.5 are answered as 2).
func idKey(id gjson.Result) string {
	if id.Type == gjson.String {
		return "s" + id.Str
	}
	return "n" + strconv.FormatInt(int64(id.Float()), 10)
}

// asked notes the requests in a message passed on (one, or a batch's),
// and forgets the ones a notifications/cancelled names: the drain at EOF
// does not wait for them, and the SDK's answer to one is not written
// (cancelledAnswer; one written before the cancellation came stays, as MCP
// allows).
func (p *pending) asked(msg []byte) {
	eachMessage(msg, func(m gjson.Result) {
		v := m.Get("method")
		if !v.Exists() {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		// A null id is no request anyone answers.
		if id := m.Get("id"); id.Type == gjson.String || id.Type == gjson.Number {
			p.ids[idKey(id)] = true
		} else if v.Str == "notifications/cancelled" {
			key := idKey(m.Get("params.requestId"))
			if p.ids[key] {
				p.cancelled[key] = true
			}
			p.forget(key)
		}
	})
}

func (p *pending) answered(id gjson.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forget(idKey(id))
}

func (p *pending) forget(key string) {
	if p.ids[key] {
		delete(p.ids, key)
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// drain waits until every request is answered, the session ends (done) or
// limit passes.
func (p *pending) drain(done <-chan struct{}, limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		p.mu.Lock()
		n, changed := len(p.ids), p.changed
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-done:
			return
		case <-t.C:
			return
		}
	}
}

func (l *lockedWriter) Close() error { return nil }

// filterAnswers writes the filter's own answers (to lines the SDK never saw)
// whole, as lockedWriter does, but without its notes: they answer no
// request the SDK holds (an id the filter refused may equal, as the SDK
// reads numbers, one it holds), and no initialize.
type filterAnswers struct{ l *lockedWriter }

func (r filterAnswers) Write(p []byte) (int, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return r.l.w.Write(p)
}

// filterFrames copies the lines of in that are JSON-RPC messages to good,
// and answers the others on errs. A line longer than the SDK accepts is
// answered and skipped without being held in memory.
func filterFrames(in io.Reader, good io.Writer, errs io.Writer, asked *pending, version *agreed) error {
	f := &framer{good: good, errs: errs, asked: asked, version: version}
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong = tooLong || len(line)+len(chunk) > mcp.DefaultMaxLineLength; !tooLong {
				line = append(line, chunk...)
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		var werr error
		if tooLong || len(line)+len(chunk) > mcp.DefaultMaxLineLength {
			werr = answer(errs, nil, jsonrpc.CodeInvalidRequest, "message longer than 16 MiB")
		} else if msg := bytes.TrimSpace(append(line, chunk...)); len(msg) > 0 {
			werr = f.frame(msg)
		}
		if werr != nil {
			return werr
		}
		line, tooLong = line[:0], false
		if err != nil { // io.EOF
			return nil
		}
	}
}

// framer checks the lines of one session.
type framer struct {
	good, errs io.Writer
	// version is the protocol version the session agreed on: JSON-RPC
	// batches are MCP's before 2025-06-18, and the SDK ends the session on
	// a batch in a later one.
	version *agreed
	asked   *pending // the requests passed on; nil: not noted
}

// batchesUntil is the first protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// noBatches answers a batch in a session of batchesUntil or later.
const noBatches = "JSON-RPC batches are not part of MCP since " + batchesUntil + ": send one message at a time (stdio: one a line)"

// frame passes one message on, or answers why it is not one.
func (f *framer) frame(msg []byte) error {
	if !json.Valid(msg) {
		return answer(f.errs, nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	}
	if msg[0] == '[' {
		if v := f.version.await(5 * time.Second); v == "" || v >= batchesUntil {
			return answer(f.errs, nil, jsonrpc.CodeInvalidRequest, noBatches)
		}
		ok := true
		gjson.ParseBytes(msg).ForEach(func(_, el gjson.Result) bool {
			ok = invalidMessage([]byte(el.Raw)) == ""
			return ok
		})
		if !ok || len(bytes.TrimSpace(msg[1:len(msg)-1])) == 0 {
			return answer(f.errs, nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch of JSON-RPC messages, not empty")
		}
	} else if why := invalidMessage(msg); why != "" {
		if v := gjson.GetManyBytes(msg, "id", "result", "error"); !v[1].Exists() && !v[2].Exists() {
			return answer(f.errs, json.RawMessage(v[0].Raw), jsonrpc.CodeInvalidRequest, "invalid request: "+why)
		}
		return nil // a response is never answered (JSON-RPC 2.0 §5): dropped
	} else if v := gjson.GetManyBytes(msg, "method", "id"); v[0].Str == "initialize" {
		if f.version.begun() {
			// The SDK answers it with error code 0, which JSON-RPC has not.
			return answer(f.errs, json.RawMessage(v[1].Raw), jsonrpc.CodeInvalidRequest, alreadyInitialized)
		}
		f.version.asked(v[1])
	}
	if f.asked != nil {
		f.asked.asked(msg)
	}
	_, err := f.good.Write(append(msg, '\n'))
	return err
}

// invalidMessage says why msg (valid JSON) is no JSON-RPC 2.0 message the
// SDK can take: a request or notification names its method, a response
// has an id and a result or an error; "" when it is one.
func invalidMessage(msg []byte) string {
	if msg[0] != '{' {
		return "a message is a JSON object"
	}
	v := gjson.GetManyBytes(msg, "jsonrpc", "method", "id", "result", "error")
	switch {
	case v[0].Str != "2.0":
		return `"jsonrpc" must be "2.0"`
	case v[1].Exists() && v[1].Type != gjson.String:
		return `"method" must be a string`
	case !v[1].Exists() && (!v[2].Exists() || v[3].Exists() == v[4].Exists()):
		return "neither a request (method) nor a response (id with a result or an error)"
	case v[1].Exists() && v[2].Type == gjson.Null && v[2].Exists():
		return `a request's "id" must not be null (MCP); leave it out for a notification`
	case v[1].Exists() && v[2].Type == gjson.Number && !exactID(v[2].Float()):
		return badNumericID
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return err.Error()
	}
	return ""
}

// badNumericID is why a request's numeric id is refused.
const badNumericID = `a request's numeric "id" must be an integer within ±2^53 (MCP's ids are strings or integers): the answer could not carry it back unchanged`

// exactID reports whether a numeric id survives the SDK, which reads it
// as a float64 and answers with the integer: 16.5 would be answered as
// 16, 2^53+1 as 2^53, and the client could not match the answer.
func exactID(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) <= 1<<53-1
}

// answer writes a JSON-RPC error response; id nil or not a string or
// number is null, as for a message whose id could not be read.
func answer(w io.Writer, id json.RawMessage, code int64, message string) error {
	if len(id) == 0 || (id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-') {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message}})
	_, err := w.Write(append(b, '\n'))
	return err
}
