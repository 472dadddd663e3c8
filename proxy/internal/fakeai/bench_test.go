package fakeai

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkReply measures the fake's own cost per answer (it runs on the
// same CPUs as the proxy in the latency benchmarks).
func BenchmarkReply(b *testing.B) {
	prompt := strings.Repeat("Please summarise the quarterly numbers. ", 200)
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"m","stream":true,"messages":[{"role":"system","content":"` + prompt + `"},{"role":"user","content":"hi"}]}`,
		"/v1/responses":        `{"model":"m","stream":true,"instructions":"` + prompt + `","input":[{"role":"user","content":"hi"}]}`,
		"/v1/messages":         `{"model":"m","max_tokens":100,"stream":true,"system":"` + prompt + `","messages":[{"role":"user","content":"hi"}]}`,
	}
	turn := Turn{Content: "Here is the report you asked for, with the numbers in a table."}
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages"} {
		b.Run(strings.TrimPrefix(path, "/v1/"), func(b *testing.B) {
			rec := Request{Method: "POST", Path: path, Body: []byte(bodies[path])}
			r := httptest.NewRequest("POST", path, strings.NewReader(""))
			r.Header.Set("X-Api-Key", "k")
			r.Header.Set("Anthropic-Version", "2023-06-01")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				Reply(turn)(w, r, rec)
				if w.Code != 200 {
					b.Fatal(w.Body.String())
				}
			}
		})
	}
}
