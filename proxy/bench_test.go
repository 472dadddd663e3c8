package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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
			u, _ := url.Parse(up.BaseURL())
			rw := newFakeRewriter()
			rw.noTools = mode == "plain"
			srv, err := New(Config{Upstream: u, Rewriter: rw, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			ps := httptest.NewServer(srv)
			defer ps.Close()
			defer srv.transport.(*http.Transport).CloseIdleConnections()
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
