package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
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
		err := filterFrames(in, pw, w, w.pending)
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
// Write, and so does filterFrames. It notes the responses that go out.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending *pending
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.pending != nil {
		eachMessage(p, func(m gjson.Result) {
			if v := m.Get("id"); !m.Get("method").Exists() && v.Exists() {
				l.pending.answered(v)
			}
		})
	}
	return n, err
}

// eachMessage calls f with each message of a frame: the one, or a batch's.
func eachMessage(frame []byte, f func(gjson.Result)) {
	if r := gjson.ParseBytes(frame); r.IsArray() {
		r.ForEach(func(_, el gjson.Result) bool { f(el); return true })
	} else {
		f(r)
	}
}

// pending holds the ids of the client's requests not answered yet.
type pending struct {
	mu      sync.Mutex
	ids     map[string]bool
	changed chan struct{} // closed and replaced when ids shrinks
}

func newPending() *pending {
	return &pending{ids: map[string]bool{}, changed: make(chan struct{})}
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
// does not wait for them (the SDK still answers one whose handler returns,
// which MCP allows: the cancellation may arrive after the answer).
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
			p.forget(idKey(m.Get("params.requestId")))
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

// filterFrames copies the lines of in that are JSON-RPC messages to good,
// and answers the others on errs. A line longer than the SDK accepts is
// answered and skipped without being held in memory.
func filterFrames(in io.Reader, good io.Writer, errs io.Writer, asked *pending) error {
	f := &framer{good: good, errs: errs, asked: asked}
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
	// version is the protocol version the client's initialize asked for:
	// JSON-RPC batches are MCP's before 2025-06-18.
	version string
	asked   *pending // the requests passed on; nil: not noted
}

// batchesUntil is the first protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// frame passes one message on, or answers why it is not one.
func (f *framer) frame(msg []byte) error {
	if !json.Valid(msg) {
		return answer(f.errs, nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	}
	if msg[0] == '[' {
		if f.version == "" || f.version >= batchesUntil {
			return answer(f.errs, nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not part of MCP since "+batchesUntil+": send one message a line")
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
	} else if gjson.GetBytes(msg, "method").Str == "initialize" {
		f.version = gjson.GetBytes(msg, "params.protocolVersion").Str
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
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return err.Error()
	}
	return ""
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
