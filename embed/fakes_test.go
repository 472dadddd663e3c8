package embed

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeVector is the deterministic vector fake servers return for a text
// (not unit length: the client must normalize).
func fakeVector(text string, dim int) []float32 {
	h := sha256.Sum256([]byte(text))
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(int(h[i%len(h)])-128) / 16
	}
	return v
}

func unitLength(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Abs(s-1) < 1e-4
}

// fakeServer records requests and answers from a script: each call takes the
// next response from fail (status, body) until it is exhausted, then
// succeeds.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	calls    int
	requests []map[string]any
	headers  []http.Header
	fail     []fakeFailure
}

type fakeFailure struct {
	status int
	body   string
}

func (f *fakeServer) next(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"invalid JSON"}`, http.StatusBadRequest)
		return nil, false
	}
	f.requests = append(f.requests, req)
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.fail) > 0 {
		ff := f.fail[0]
		f.fail = f.fail[1:]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ff.status)
		w.Write([]byte(ff.body))
		return nil, false
	}
	return req, true
}

func (f *fakeServer) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func inputs(req map[string]any) []string {
	switch in := req["input"].(type) {
	case string:
		return []string{in}
	case []any:
		out := make([]string, len(in))
		for i, x := range in {
			out[i], _ = x.(string)
		}
		return out
	}
	return nil
}

// newFakeOllama serves POST /api/embed as Ollama documents it: input is a
// string or an array of strings, the response holds "embeddings" in input
// order, errors are {"error": "..."} with an HTTP status (404 for a model
// that is not pulled).
func newFakeOllama(t *testing.T, models map[string]int) *fakeServer {
	f := &fakeServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		req, ok := f.next(w, r)
		if !ok {
			return
		}
		model, _ := req["model"].(string)
		dim, known := models[model]
		if !known {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"error": "model \"" + model + "\" not found, try pulling it first"})
			return
		}
		if d, ok := req["dimensions"].(float64); ok && d > 0 {
			dim = int(d)
		}
		var embs [][]float32
		for _, in := range inputs(req) {
			embs = append(embs, fakeVector(in, dim))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"model": model, "embeddings": embs,
			"total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8,
		})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// newFakeOpenAI serves POST /v1/embeddings in the OpenAI wire format:
// {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...]}],
// "model":...,"usage":{...}}; errors are {"error":{"message","type",...}}.
// This fake returns data in reverse order (allowed: clients must use
// index) and checks the bearer key when key is set.
func newFakeOpenAI(t *testing.T, key string, dim int) *fakeServer {
	f := &fakeServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			f.mu.Lock()
			f.calls++
			f.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
			return
		}
		req, ok := f.next(w, r)
		if !ok {
			return
		}
		in := inputs(req)
		for _, s := range in {
			if s == "" {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error"}}`))
				return
			}
		}
		d := dim
		if x, ok := req["dimensions"].(float64); ok && x > 0 {
			d = int(x)
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i := len(in) - 1; i >= 0; i-- {
			data = append(data, item{"embedding", i, fakeVector(in[i], d)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"object": "list", "data": data, "model": req["model"],
			"usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8},
		})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}
