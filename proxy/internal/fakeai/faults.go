package fakeai

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault modes, for tests and the reliability suite (proxy/reliability):
// scripted per turn (Turn.Inject, Turn.CutAfter, Turn.Hold, Turn.Interval,
// Turn.Fail) or per request with the FaultHeader, so that a load client
// can mix faults into one stream of requests.

// beforeEvent runs the turn's stream faults before event i is written:
// Hold, Interval, Inject and CutAfter. false: stop writing (the client is
// gone, or the connection was cut).
func (t *Turn) beforeEvent(w http.ResponseWriter, r *http.Request, i int) bool {
	if t.CutAfter > 0 && i == t.CutAfter {
		cut(w)
		return false
	}
	if t.Hold != nil && i == t.HoldAfter {
		select {
		case <-t.Hold:
		case <-r.Context().Done():
			return false
		}
	}
	if t.Interval > 0 && i > 0 {
		select {
		case <-time.After(t.Interval):
		case <-r.Context().Done():
			return false
		}
	}
	if t.Inject != "" && i == t.InjectAfter {
		if _, err := io.WriteString(w, t.Inject); err != nil || t.EndAtInject {
			return false
		}
	}
	return true
}

// cut flushes what was written and closes the connection under the
// response: the client sees the body end without its terminator.
func cut(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if c, _, err := rc.Hijack(); err == nil {
		c.Close()
	}
}

// CutBody answers with status and a Content-Length longer than partial,
// writes partial and closes the connection: a non-streamed answer that
// breaks off mid-body.
func CutBody(status int, partial string) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(partial)+100))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, partial)
		cut(w)
	}
}

// FaultHeader selects a fault per request for FaultFromHeader:
//
//	500, 429, 503      that status in the API's error envelope
//	hang               no answer until the client goes away
//	slow-headers:D     answer after D (a Go duration)
//	cut-body           a non-streamed answer cut mid-body
//	cut-stream:N       a streamed answer cut after N events
//	stall:N            a streamed answer that stops sending after N events
//	malformed:N        "data: [1,2," injected before event N
//	stray:N            lines that are not SSE injected before event N
//	slow:D             a pause of D between events (slow tokens)
const FaultHeader = "X-Fakeai-Fault"

// FaultFromHeader answers a request with the fault its FaultHeader names,
// or with next when it names none.
func FaultFromHeader(next Turn) Responder {
	return func(w http.ResponseWriter, r *http.Request, rec Request) {
		kind, arg, _ := strings.Cut(r.Header.Get(FaultHeader), ":")
		n, _ := strconv.Atoi(arg)
		d, _ := time.ParseDuration(arg)
		t := next
		switch kind {
		case "":
		case "500", "429", "503":
			code, _ := strconv.Atoi(kind)
			Status(code, "fakeai: injected "+kind)(w, r, rec)
			return
		case "hang":
			Hang()(w, r, rec)
			return
		case "slow-headers":
			Delay(d, Reply(t))(w, r, rec)
			return
		case "cut-body":
			CutBody(200, `{"id":"chatcmpl-cut","object":"chat.compl`)(w, r, rec)
			return
		case "cut-stream":
			t.CutAfter = max(n, 1)
		case "stall":
			t.Hold, t.HoldAfter = r.Context().Done(), n
		case "malformed":
			t.Inject, t.InjectAfter = "data: [1,2,\n\n", n
		case "stray":
			t.Inject, t.InjectAfter = "<html>\n<body>Bad Gateway</body>\n\n", n
		case "slow":
			t.Interval = d
		default:
			Status(400, fmt.Sprintf("fakeai: unknown fault %q", kind))(w, r, rec)
			return
		}
		Reply(t)(w, r, rec)
	}
}
