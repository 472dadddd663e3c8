package embed

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
)

// countingTransport counts the requests it sends and marks them, as a
// tracing transport adds traceparent.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Transport", "yes")
	return http.DefaultTransport.RoundTrip(r)
}

// TestConfigTransport: both remote providers send through Config.Transport
// (where cmd/router puts the tracing transport), with and without BaseURL.
func TestConfigTransport(t *testing.T) {
	ollama := newFakeOllama(t, map[string]int{"nomic-embed-text": 8})
	openai := newFakeOpenAI(t, "", 8)
	cases := []struct {
		name string
		cfg  Config
		srv  *fakeServer
		env  string
	}{
		{"ollama base_url", Config{Provider: ProviderOllama, BaseURL: ollama.URL}, ollama, ""},
		{"ollama OLLAMA_HOST", Config{Provider: ProviderOllama}, ollama, ollama.URL},
		{"openai", Config{Provider: ProviderOpenAI, BaseURL: openai.URL + "/v1"}, openai, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("OLLAMA_HOST", c.env)
			}
			tr := &countingTransport{}
			c.cfg.Transport, c.cfg.CacheDir = tr, "-"
			e, err := New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			before := c.srv.callCount()
			if _, err := e.Embed(context.Background(), []string{"hello"}); err != nil {
				t.Fatal(err)
			}
			if tr.n.Load() != 1 || c.srv.callCount() != before+1 {
				t.Fatalf("transport sent %d requests, server got %d, want 1", tr.n.Load(), c.srv.callCount()-before)
			}
			c.srv.mu.Lock()
			got := c.srv.headers[len(c.srv.headers)-1].Get("X-Test-Transport")
			c.srv.mu.Unlock()
			if got != "yes" {
				t.Error("the request did not go through Config.Transport")
			}
		})
	}
}
