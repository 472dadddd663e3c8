package embed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func noSleep(r *remote) *[]time.Duration {
	var slept []time.Duration
	r.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	return &slept
}

func TestOllamaEmbed(t *testing.T) {
	srv := newFakeOllama(t, map[string]int{"nomic-embed-text": 12, "all-minilm": 6})
	tests := []struct {
		name       string
		cfg        Config
		texts      []string
		wantCalls  int
		wantDim    int
		wantPrefix string
	}{
		{"default model, query prefix", Config{}, []string{"a", "b", "c"}, 1, 12, "search_query: "},
		{"batches of two", Config{BatchSize: 2}, []string{"a", "b", "c", "d", "e"}, 3, 12, "search_query: "},
		{"other model, no prefix", Config{Model: "all-minilm"}, []string{"x"}, 1, 6, ""},
		{"dimensions passed", Config{Dimensions: 4}, []string{"x", "y"}, 1, 4, "search_query: "},
		{"empty text sent as a space", Config{Model: "all-minilm"}, []string{""}, 1, 6, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.callCount()
			tt.cfg.BaseURL = srv.URL
			o, err := NewOllama(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := o.Embed(context.Background(), tt.texts)
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.callCount() - before; got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
			if len(vecs) != len(tt.texts) {
				t.Fatalf("%d vectors for %d texts", len(vecs), len(tt.texts))
			}
			for i, v := range vecs {
				text := tt.texts[i]
				if text == "" {
					text = " "
				}
				want := fakeVector(tt.wantPrefix+text, tt.wantDim)
				normalize(want)
				if !reflect.DeepEqual(v, want) {
					t.Errorf("vector %d is not the (normalized) vector of %q", i, tt.wantPrefix+text)
				}
				if !unitLength(v) {
					t.Errorf("vector %d not unit length", i)
				}
			}
			if o.Dimensions() != tt.wantDim {
				t.Errorf("Dimensions() = %d, want %d", o.Dimensions(), tt.wantDim)
			}
			req := srv.requests[len(srv.requests)-1]
			if req["truncate"] != true {
				t.Errorf("truncate = %v, want true", req["truncate"])
			}
		})
	}
}

func TestOllamaDocumentPrefix(t *testing.T) {
	srv := newFakeOllama(t, map[string]int{"nomic-embed-text:v1.5": 8})
	o, err := NewOllama(Config{BaseURL: srv.URL + "/", Model: "nomic-embed-text:v1.5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.EmbedDocuments(context.Background(), []string{"doc"}); err != nil {
		t.Fatal(err)
	}
	if got := inputs(srv.requests[0]); !reflect.DeepEqual(got, []string{"search_document: doc"}) {
		t.Errorf("input = %q", got)
	}
}

func TestOllamaErrors(t *testing.T) {
	tests := []struct {
		name      string
		fail      []fakeFailure
		model     string
		wantKind  error
		wantCalls int
		wantIn    string
	}{
		{"model not pulled", nil, "missing-model", ErrMisconfigured, 1, "ollama pull missing-model"},
		{"bad request not retried", []fakeFailure{{400, `{"error":"invalid input type"}`}}, "m", ErrMisconfigured, 1, "invalid input"},
		{"503 retried then ok", []fakeFailure{{503, `{"error":"server busy"}`}}, "m", nil, 2, ""},
		{"429 retried then ok", []fakeFailure{{429, `{"error":"too many requests"}`}, {500, `{"error":"boom"}`}}, "m", nil, 3, ""},
		{"5xx until retries run out", []fakeFailure{{500, `{}`}, {500, `{}`}, {500, `{}`}}, "m", ErrUnavailable, 3, "500"},
		{"not JSON", []fakeFailure{{502, `<html>bad gateway</html>`}, {502, `<html>bad gateway</html>`}, {502, `<html>`}}, "m", ErrUnavailable, 3, "HTTP 502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeOllama(t, map[string]int{"m": 4})
			srv.fail = tt.fail
			o, err := NewOllama(Config{BaseURL: srv.URL, Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			slept := noSleep(o.remote)
			_, err = o.EmbedDocuments(context.Background(), []string{"x"})
			checkEmbedErr(t, err, tt.wantKind, tt.wantIn)
			if got := srv.callCount(); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
			if len(*slept) != tt.wantCalls-1 {
				t.Errorf("slept %d times, want %d", len(*slept), tt.wantCalls-1)
			}
			for i := 1; i < len(*slept); i++ {
				if (*slept)[i] < (*slept)[i-1]/2 {
					t.Errorf("backoff shrank: %v", *slept)
				}
			}
		})
	}
}

func TestRemoteDown(t *testing.T) {
	// A port nothing listens on (privileged): connection refused is
	// "down", retried.
	addr := "http://127.0.0.1:1"
	for _, mk := range []func() (Embedder, *remote, error){
		func() (Embedder, *remote, error) {
			o, err := NewOllama(Config{BaseURL: addr})
			if err != nil {
				return nil, nil, err
			}
			return o, o.remote, nil
		},
		func() (Embedder, *remote, error) {
			o, err := NewOpenAI(Config{BaseURL: addr + "/v1"})
			if err != nil {
				return nil, nil, err
			}
			return o, o.remote, nil
		},
	} {
		e, r, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		slept := noSleep(r)
		_, err = e.(DocumentEmbedder).EmbedDocuments(context.Background(), []string{"x"})
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", e.Name(), err)
		}
		if len(*slept) != DefaultRetries {
			t.Errorf("%s: %d retries, want %d", e.Name(), len(*slept), DefaultRetries)
		}
		// A query is tried once: the router waits for it within a
		// latency budget a backoff would spend, and falls back to BM25.
		*slept = nil
		_, err = e.Embed(context.Background(), []string{"x"})
		if !errors.Is(err, ErrUnavailable) || len(*slept) != 0 {
			t.Errorf("%s: query: err = %v after %d retries, want ErrUnavailable after none", e.Name(), err, len(*slept))
		}
	}
}

func TestRemoteTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	o, err := NewOpenAI(Config{BaseURL: srv.URL, Timeout: 50 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = o.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timed out after %v, want about 50ms", d)
	}

	// The caller's own deadline ends retries at once.
	o2, _ := NewOpenAI(Config{BaseURL: srv.URL, Timeout: time.Minute, Retries: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = o2.Embed(ctx, []string{"x"})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping the deadline", err)
	}
}

func TestOpenAIEmbed(t *testing.T) {
	srv := newFakeOpenAI(t, "sk-test", 10)
	tests := []struct {
		name     string
		cfg      Config
		texts    []string
		wantDims int
		sentDims any
	}{
		{"order by index", Config{}, []string{"one", "two", "three"}, 10, nil},
		{"dimensions", Config{Dimensions: 5, Model: "text-embedding-3-large"}, []string{"a"}, 5, 5.0},
		{"batching", Config{BatchSize: 2}, []string{"a", "b", "c"}, 10, nil},
		{"empty input", Config{}, []string{"", "x"}, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.BaseURL = srv.URL + "/v1/"
			tt.cfg.APIKey = "sk-test"
			o, err := NewOpenAI(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := len(srv.requests)
			vecs, err := o.Embed(context.Background(), tt.texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vecs {
				text := tt.texts[i]
				if text == "" {
					text = " "
				}
				want := fakeVector(text, tt.wantDims)
				normalize(want)
				if !reflect.DeepEqual(v, want) {
					t.Errorf("vector %d is not the vector of %q", i, text)
				}
			}
			req := srv.requests[n]
			if req["encoding_format"] != "float" {
				t.Errorf("encoding_format = %v", req["encoding_format"])
			}
			if req["dimensions"] != tt.sentDims {
				t.Errorf("dimensions = %v, want %v", req["dimensions"], tt.sentDims)
			}
			wantModel := tt.cfg.Model
			if wantModel == "" {
				wantModel = DefaultOpenAIModel
			}
			if req["model"] != wantModel {
				t.Errorf("model = %v, want %v", req["model"], wantModel)
			}
			if got := srv.headers[n].Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name      string
		key       string
		fail      []fakeFailure
		wantKind  error
		wantCalls int
		wantIn    string
	}{
		{"bad key not retried", "wrong", nil, ErrMisconfigured, 1, "Incorrect API key"},
		{"unknown model 404", "k", []fakeFailure{{404, `{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error"}}`}}, ErrMisconfigured, 1, "does not exist"},
		{"rate limited then ok", "k", []fakeFailure{{429, `{"error":{"message":"Rate limit reached","type":"requests"}}`}}, nil, 2, ""},
		{"wrong count", "k", []fakeFailure{{200, `{"object":"list","data":[],"model":"m"}`}, {200, `{"object":"list","data":[],"model":"m"}`}, {200, `{}`}}, ErrMalformedResponse, 3, "0 embeddings"},
		{"duplicate index", "k", []fakeFailure{{200, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`}}, nil, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeOpenAI(t, "k", 4)
			srv.fail = tt.fail
			o, err := NewOpenAI(Config{BaseURL: srv.URL + "/v1", APIKey: tt.key})
			if err != nil {
				t.Fatal(err)
			}
			noSleep(o.remote)
			texts := []string{"x"}
			if strings.Contains(tt.name, "duplicate") {
				texts = []string{"x", "y"}
			}
			_, err = o.EmbedDocuments(context.Background(), texts)
			checkEmbedErr(t, err, tt.wantKind, tt.wantIn)
			if got := srv.callCount(); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestDimensionMismatchIsMisconfigured(t *testing.T) {
	srv := newFakeOpenAI(t, "", 6)
	o, err := NewOpenAI(Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	o.dims.Store(3) // as if the server switched models under us
	_, err = o.Embed(context.Background(), []string{"y"})
	if !errors.Is(err, ErrMisconfigured) || srv.callCount() != 2 {
		t.Fatalf("err = %v after %d calls, want ErrMisconfigured without retry", err, srv.callCount())
	}
}

func TestNewConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Provider: "cohere"},
		{Provider: "openai", BaseURL: "ftp://x"},
		{Provider: "openai", BaseURL: "::bad"},
		{Provider: "ollama", BaseURL: "localhost"},
		{Provider: "builtin", Dimensions: 1}, // slot 0 is reserved; hashing mod 0 would panic
	} {
		if _, err := New(cfg); !errors.Is(err, ErrMisconfigured) {
			t.Errorf("New(%+v) err = %v, want ErrMisconfigured", cfg, err)
		}
	}
}

func TestNewProviders(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "*embed.Builtin"},
		{Config{Provider: "builtin", CacheDir: "/nonexistent"}, "*embed.Builtin"},
		{Config{Provider: "ollama"}, "*embed.Cache"},
		{Config{Provider: "openai", APIKey: "k", CacheDir: "-"}, "*embed.OpenAI"},
		{Config{Provider: "openai", BaseURL: "http://127.0.0.1:8000/v1", CacheDir: "-"}, "*embed.OpenAI"}, // a local server needs no key
		{Config{Provider: "ollama", CacheDir: "-"}, "*embed.Ollama"},
	}
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := New(Config{Provider: "openai"}); !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), "api.openai.com needs a key") {
		t.Errorf("OpenAI's own API without a key: %v", err)
	}
	for _, tt := range tests {
		e, err := New(tt.cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", tt.cfg, err)
		}
		if got := fmt.Sprintf("%T", e); got != tt.want {
			t.Errorf("New(%+v) = %s, want %s", tt.cfg, got, tt.want)
		}
	}
}

// checkEmbedErr wants no error when kind is nil, else an error of kind whose
// message mentions in.
func checkEmbedErr(t *testing.T, err, kind error, in string) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("err = %v", err)
		}
	} else if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want %v", err, kind)
	} else if !strings.Contains(err.Error(), in) {
		t.Errorf("err = %v, want it to mention %q", err, in)
	}
}

// A base URL with a query (a key some gateways take as ?key=) keeps it on
// the embeddings path, and no error shows its value: they reach logs, the
// access log's fallback_reason and /v1/skills/route answers.
func TestOpenAIBaseURLQuery(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.String()
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
	}))
	o, err := NewOpenAI(Config{BaseURL: srv.URL + "/v1?key=SECRET", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"x"})
	if got != "/v1/embeddings?key=SECRET" {
		t.Errorf("the upstream got %q, want /v1/embeddings?key=SECRET", got)
	}
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("status error %v", err)
	}
	srv.Close() // down: a transport error, which quotes the URL
	if _, err = o.Embed(context.Background(), []string{"y"}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("transport error %v", err)
	}
}

// TestRemoteTimeoutRetried: a library batch cut by its own timeout (a model
// still loading) is retried, as a refused connection or a 5xx is; the
// router's query is not (it has a latency budget).
func TestRemoteTimeoutRetried(t *testing.T) {
	var calls atomic.Int32
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 { // the first call outlasts the timeout
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],"model":"m"}`)
	}))
	defer srv.Close()
	defer close(done)
	o, err := NewOpenAI(Config{BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	noSleep(o.remote)
	if _, err := o.EmbedDocuments(context.Background(), []string{"x"}); err != nil || calls.Load() != 2 {
		t.Fatalf("err %v after %d calls, want the batch retried once", err, calls.Load())
	}
}

// A 429's wait (Retry-After in seconds or as a date, OpenAI's
// retry-after-ms) is carried on the error for the router's breaker, a
// library batch waits it out before its retry, and a wait longer than
// maxRetryWait ends the batch's retries at once.
func TestOpenAIRetryAfter(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name      string
		header    map[string]string
		want      time.Duration // 0: none on the error
		wantCalls int
	}{
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second, 2},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, 2},
		{"date", map[string]string{"Retry-After": now.Add(20 * time.Second).UTC().Format(http.TimeFormat)}, 20 * time.Second, 2},
		{"longer than a batch waits", map[string]string{"Retry-After": "120"}, 120 * time.Second, 1},
		{"capped", map[string]string{"Retry-After": "86400"}, maxRetryAfter, 1},
		{"none", nil, 0, 2},
		{"unreadable", map[string]string{"Retry-After": "soon"}, 0, 2},
		{"in the past", map[string]string{"Retry-After": now.Add(-time.Minute).UTC().Format(http.TimeFormat)}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
			}))
			defer srv.Close()
			o, err := NewOpenAI(Config{BaseURL: srv.URL + "/v1", Retries: 1})
			if err != nil {
				t.Fatal(err)
			}
			slept := noSleep(o.remote)
			_, err = o.EmbedDocuments(context.Background(), []string{"x"})
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			got, ok := RetryAfter(err)
			if ok != (tt.want > 0) || got < tt.want-2*time.Second || got > tt.want {
				t.Errorf("RetryAfter = %v, %v; want %v", got, ok, tt.want)
			}
			if n := int(calls.Load()); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if tt.wantCalls == 2 && tt.want > 0 && (len(*slept) != 1 || (*slept)[0] < got) {
				t.Errorf("slept %v before the retry, want at least %v", *slept, got)
			}
			// The query path asks once and hands the wait to the router.
			_, err = o.Embed(context.Background(), []string{"q"})
			if got, ok := RetryAfter(err); ok != (tt.want > 0) || got > tt.want {
				t.Errorf("query: RetryAfter = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}

// An all-zero vector is a malformed answer (retried, then unavailable):
// kept, it would leave its skill unreachable by similarity.
func TestRemoteZeroVector(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, `{"object":"list","data":[{"index":0,"embedding":[0.5,0.5]},{"index":1,"embedding":[0,0]}],"model":"m"}`)
	}))
	defer srv.Close()
	o, err := NewOpenAI(Config{BaseURL: srv.URL + "/v1", Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	noSleep(o.remote)
	_, err = o.EmbedDocuments(context.Background(), []string{"x", "y"})
	checkEmbedErr(t, err, ErrMalformedResponse, "vector 1 is all zeros")
	if !errors.Is(err, ErrUnavailable) || calls.Load() != 2 {
		t.Errorf("err = %v after %d calls, want unavailable after a retry", err, calls.Load())
	}
}
