package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/proxy/internal/fakeai"
)

// BenchmarkSSERelay streams a 1,000-chunk chat completion through the proxy:
// "tool-loop" parses every event (the path taken whenever the request offers
// server-side tools), "plain" relays bytes (no session); "direct" reads the
// same stream from the upstream for reference. One op = one whole stream.
//
//	go test -run XXX -bench SSERelay ./proxy
func BenchmarkSSERelay(b *testing.B) {
	events := fakeai.Events("chatcmpl-bench", fakeai.Turn{Model: "m", Content: strings.Repeat("tok ", 1000), ContentChunks: 1000,
		Usage: &fakeai.Usage{PromptTokens: 10, CompletionTokens: 1000, TotalTokens: 1010}}, true)
	var sb strings.Builder
	for _, e := range events {
		sb.WriteString("data: ")
		sb.Write(e)
		sb.WriteString("\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	stream := sb.String()
	body := streamChat(`,"stream_options":{"include_usage":true}`)

	for _, mode := range []string{"direct", "plain", "tool-loop"} {
		b.Run(mode, func(b *testing.B) {
			up := fakeai.New()
			defer up.Close()
			up.Handle("/v1/chat/completions", fakeai.Raw(200, "text/event-stream", stream))
			rw := newFakeRewriter()
			rw.noTools = mode == "plain"
			ps := benchProxy(b, up, rw)
			target := ps.URL + "/v1/chat/completions"
			if mode == "direct" {
				target = up.BaseURL() + "/chat/completions"
			}
			client := ps.Client()
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := client.Post(target, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n < int64(len(stream))/2 {
					b.Fatalf("short stream: %d bytes", n)
				}
			}
			b.StopTimer()
			up.Reset()
		})
	}
}

// BenchmarkResponsesRelay answers a Responses request with instructions
// and tools through the proxy (tool loop on: the request gets the catalog
// and load_skill), streamed (1,000 text deltas) and as JSON; "direct" reads
// the same answer from the upstream for reference. One op = one request.
//
//	go test -run '^$' -bench Responses ./proxy
func BenchmarkResponsesRelay(b *testing.B) {
	instr := strings.Repeat("You are a coding agent. Follow the repository's conventions. ", 80)
	tools := `[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}},{"type":"function","name":"apply_patch","parameters":{"type":"object","properties":{"patch":{"type":"string"}}}}]`
	for _, stream := range []bool{true, false} {
		for _, mode := range []string{"direct", "tool-loop"} {
			name := map[bool]string{true: "stream", false: "json"}[stream] + "/" + mode
			b.Run(name, func(b *testing.B) {
				up := fakeai.New()
				defer up.Close()
				up.StopRecording()
				up.Handle("/v1/responses", fakeai.Reply(fakeai.Turn{Content: strings.Repeat("tok ", 1000), ContentChunks: 1000}))
				ps := benchProxy(b, up, newFakeRewriter())
				target := ps.URL + "/v1/responses"
				if mode == "direct" {
					target = up.BaseURL() + "/responses"
				}
				body := `{"model":"m","store":false,"stream":` + strconv.FormatBool(stream) + `,"instructions":` + jsonString(instr) +
					`,"tools":` + tools + `,"input":"make me a pdf"}`
				client := ps.Client()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					resp, err := client.Post(target, "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || n < 4000 {
						b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
					}
				}
			})
		}
	}
}

// benchProxy serves a proxy in front of up with rw, without logs, until
// the benchmark ends.
func benchProxy(b *testing.B, up *fakeai.Server, rw Rewriter) *httptest.Server {
	b.Helper()
	u, _ := url.Parse(up.BaseURL())
	srv, err := New(Config{Upstream: u, Rewriter: rw, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ps := httptest.NewUnstartedServer(srv)
	ps.Listener = ResetStalled(ps.Listener) // as cmd/router serves it
	ps.Start()
	b.Cleanup(func() {
		srv.transport.(*http.Transport).CloseIdleConnections()
		ps.Close()
	})
	return ps
}
