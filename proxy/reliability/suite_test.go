// Package reliability is skillrouter's reliability suite (issue 14): the
// built `router serve` in front of a fake upstream with fault modes
// (package fakeai), a bounded load client, and one scenario per defect the
// hardening fixed, plus a soak (flat memory, goroutines and file
// descriptors) and hot reloads under load. It prints one table of figures.
//
// The short version runs with the other tests (make test); the long one
// (more sockets, a 10-minute soak, a minute of reloads under load) is
//
//	make reliability
//
// which sets RELIABILITY=long. docs/reliability.md holds its table.
package reliability

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// long is the full suite (make reliability).
var long = os.Getenv("RELIABILITY") == "long"

// pick is short in the default run, long in the full one.
func pick[T any](short, full T) T {
	if long {
		return full
	}
	return short
}

// row is one line of the suite's table.
type row struct {
	scenario, repro, result, figures string
}

var (
	tableMu sync.Mutex
	table   []row
)

// report adds the scenario's row; the result is "ok" unless the
// (sub)test failed.
func report(t *testing.T, scenario, repro, format string, args ...any) {
	t.Helper()
	result := "ok"
	if t.Failed() {
		result = "FAIL"
	}
	tableMu.Lock()
	defer tableMu.Unlock()
	table = append(table, row{scenario, repro, result, fmt.Sprintf(format, args...)})
}

// TestReliability runs every scenario and prints the table.
func TestReliability(t *testing.T) {
	if testing.Short() {
		t.Skip("the reliability suite builds and runs the router binary")
	}
	routerBinary(t)
	for _, sc := range scenarios {
		t.Run(sc.name, sc.run)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "| scenario\t| repro\t| result\t| figures\t|\n|---\t|---\t|---\t|---\t|\n")
	for _, r := range table {
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t|\n", r.scenario, r.repro, r.result, r.figures)
	}
	tw.Flush()
	mode := "short (make test)"
	if long {
		mode = "long (make reliability)"
	}
	fmt.Printf("\nskillrouter reliability suite, %s, %s:\n\n%s\n", mode, time.Now().UTC().Format("2006-01-02"), b.String())
}

var scenarios = []struct {
	name string
	run  func(t *testing.T)
}{
	{"timeouts-and-connection-cap", scenarioTimeouts},
	{"pass-through-confinement", scenarioConfinement},
	{"access-control", scenarioAccess},
	{"incremental-reload-under-load", scenarioReload},
	{"shutdown", scenarioShutdown},
	{"broken-streams", scenarioBrokenStreams},
	{"upstream-timeouts", scenarioUpstreamTimeouts},
	{"validation", scenarioValidation},
	{"soak", scenarioSoak},
}

// upstream is a fake model API answering every model path by the request's
// fault header (fakeai.FaultFromHeader), "ok ..." otherwise.
func upstream(t *testing.T) *fakeai.Server {
	t.Helper()
	up := fakeai.New()
	t.Cleanup(up.Close)
	up.StopRecording()
	answer := fakeai.FaultFromHeader(fakeai.Turn{Content: "ok, here is the answer you asked for", Usage: &fakeai.Usage{PromptTokens: 10, CompletionTokens: 8}})
	for _, p := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages"} {
		up.Handle(p, answer)
	}
	return up
}

// examples is the repository's example library (absolute: the proxy reads
// paths in its configuration relative to the file).
func examples() string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", "examples", "skills"))
	return abs
}

// baseConfig points a proxy at up with the library lib; upstream holds
// more keys of the upstream section ("header_timeout: 2s").
func baseConfig(up *fakeai.Server, lib string, upstream ...string) string {
	s := "upstream:\n  url: " + up.BaseURL() + "\n"
	for _, u := range upstream {
		s += "  " + u + "\n"
	}
	return s + "skills:\n  - " + lib + "\nwatch: false\n"
}

// apiCall is a request of one client API.
type apiCall struct {
	api, path string
	hdr       map[string]string
}

var apis = []apiCall{
	{"chat", "/v1/chat/completions", nil},
	{"responses", "/v1/responses", nil},
	{"messages", "/v1/messages", map[string]string{"x-api-key": "client-key", "anthropic-version": "2023-06-01"}},
}

// body is a request of a's API asking question.
func (a apiCall) body(question string, stream bool) string {
	q := fmt.Sprintf("%q", question)
	switch a.api {
	case "responses":
		return fmt.Sprintf(`{"model":"m","stream":%v,"input":%s}`, stream, q)
	case "messages":
		return fmt.Sprintf(`{"model":"m","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":%s}]}`, stream, q)
	}
	return fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":%s}]}`, stream, q)
}

// errorEvent is how a's streams end with an error.
func (a apiCall) errorEvent() string {
	if a.api == "chat" {
		return `data: {"error":`
	}
	return "event: error\ndata: "
}

// request builds a request of a's API.
func (a apiCall) request(base, body string, extra map[string]string) *http.Request {
	req, _ := http.NewRequest("POST", base+a.path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range a.hdr {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	return req
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func secs(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}
