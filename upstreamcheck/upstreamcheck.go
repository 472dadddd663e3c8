// Package upstreamcheck checks that an OpenAI-compatible upstream answers
// GET {base}/models, and says what is wrong when it does not: unreachable,
// a key it rejects, or a base URL that misses its /v1 ("did you mean
// http://127.0.0.1:11434/v1?"). `router serve` checks at start and then
// periodically, for the log and /readyz; `router doctor` checks once.
package upstreamcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skillrouter/skillrouter/internal/redact"
)

// DefaultTimeout bounds one probe.
const DefaultTimeout = 5 * time.Second

// Status is the outcome of a check.
type Status string

const (
	StatusPending      Status = "pending"      // not checked yet
	StatusOK           Status = "ok"           // 2xx with a model list
	StatusNotFound     Status = "not_found"    // 404 on /models: usually a base URL without /v1
	StatusUnauthorized Status = "unauthorized" // 401 or 403
	StatusUnreachable  Status = "unreachable"  // no HTTP answer at all
	StatusError        Status = "error"        // any other answer
)

// Result is one check of one upstream. It names the upstream by its
// configuration key and host, never by a URL that could carry credentials.
type Result struct {
	Name       string    `json:"name"`
	Host       string    `json:"host"`
	Status     Status    `json:"status"`
	HTTPStatus int       `json:"http_status,omitempty"`
	LatencyMS  float64   `json:"latency_ms"`
	Models     int       `json:"models"`
	Error      string    `json:"error,omitempty"`
	Hint       string    `json:"hint,omitempty"` // what to change, when we can tell
	CheckedAt  time.Time `json:"checked_at,omitzero"`
	// ModelIDs are the first few models listed, for doctor; not in /readyz.
	ModelIDs []string `json:"-"`
	// ClientKeys: the upstream answered 401 or 403 to a probe without a
	// key, none being configured: it is there, and wants the key clients
	// send (Claude Code and the SDKs send their own), which is how a proxy
	// without upstream keys is meant to run.
	ClientKeys bool `json:"client_keys,omitempty"`
}

// OK reports whether the upstream answered as expected.
func (r Result) OK() bool { return r.Status == StatusOK }

// Summary is the result as one line for logs and tables.
func (r Result) Summary() string {
	switch r.Status {
	case StatusPending:
		return "not checked yet"
	case StatusOK:
		return fmt.Sprintf("ok: %d models, %.0f ms", r.Models, r.LatencyMS)
	}
	s := r.Error
	if r.Hint != "" {
		s += ": " + r.Hint
	}
	return s
}

// Config configures a Checker.
type Config struct {
	// Name is what the configuration calls the upstream (upstream.url).
	Name string
	// URL is the upstream's base URL, including its version prefix (/v1).
	URL string
	// Header is sent with every probe (the configured key, if any).
	Header http.Header
	// KeyName is the configuration key of the upstream's API key, named in
	// hints (default upstream.api_key).
	KeyName string
	// Default: URL is the default, not one the configuration gave; a hint
	// for an upstream that does not answer says so.
	Default bool
	// Transport sends the probes; nil: a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds one probe (default 5s).
	Timeout time.Duration
	// Logger gets a line per change of status; nil discards.
	Logger *slog.Logger
}

// Checker probes one upstream and remembers the last result. Safe for
// concurrent use.
type Checker struct {
	cfg    Config
	base   *url.URL
	client *http.Client
	log    *slog.Logger
	last   atomic.Pointer[Result]
}

// New validates cfg and returns a Checker whose Last is pending.
func New(cfg Config) (*Checker, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstreamcheck: %s %q: want an absolute http(s) URL", cfg.Name, cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.KeyName == "" {
		cfg.KeyName = "upstream.api_key"
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Checker{cfg: cfg, base: u, log: log,
		client: &http.Client{Transport: cfg.Transport, Timeout: cfg.Timeout,
			// A redirect on /models is an answer worth reporting, not following.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c.last.Store(&Result{Name: cfg.Name, Host: u.Host, Status: StatusPending})
	return c, nil
}

// Last returns the latest result (pending before the first check).
func (c *Checker) Last() Result { return *c.last.Load() }

// Run checks at once and then every interval (only once when interval is
// 0) until ctx ends, logging the first result and every change of status.
func (c *Checker) Run(ctx context.Context, interval time.Duration) {
	prev := c.Check(ctx)
	c.logResult(prev, true)
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r := c.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		if r.Status != prev.Status {
			c.logResult(r, false)
		}
		prev = r
	}
}

func (c *Checker) logResult(r Result, first bool) {
	attrs := []any{"upstream", c.cfg.Name, "url", redact.Stripped(c.base), "latency_ms", r.LatencyMS}
	if r.OK() {
		msg := "upstream ok"
		if !first {
			msg = "upstream ok again"
		}
		c.log.Info(msg, append(attrs, "models", r.Models)...)
		return
	}
	if r.ClientKeys {
		c.log.Info("upstream answers; it wants a key, which clients must send (none configured)", append(attrs, "http_status", r.HTTPStatus)...)
		return
	}
	c.log.Warn("upstream check failed: "+r.Summary(), attrs...)
}

// Check probes the upstream once and records the result.
func (c *Checker) Check(ctx context.Context) Result {
	r := c.probe(ctx)
	c.last.Store(&r)
	return r
}

func (c *Checker) probe(ctx context.Context) Result {
	r := Result{Name: c.cfg.Name, Host: c.base.Host, CheckedAt: time.Now().UTC().Truncate(time.Millisecond)}
	start := time.Now()
	status, body, err := c.get(ctx, c.modelsURL(c.base))
	r.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		r.Status, r.Error = StatusUnreachable, "unreachable: "+cause(err)
		r.Hint = "is the server running, and is " + c.cfg.Name + " its address?"
		if c.cfg.Default {
			r.Hint = c.cfg.Name + " is not set, and its default (Ollama on this machine) does not answer: set it to your model's API (--upstream), or ignore this if no client uses it"
		}
		return r
	}
	r.HTTPStatus = status
	switch {
	case status >= 200 && status < 300:
		ids, ok := modelIDs(body)
		if !ok {
			r.Status, r.Error = StatusError, fmt.Sprintf("GET /models answered %d but not with a model list", status)
			r.Hint = "is " + redact.Stripped(c.base) + " an OpenAI-compatible API?"
			return r
		}
		r.Status, r.Models = StatusOK, len(ids)
		r.ModelIDs = ids[:min(len(ids), 10)]
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		r.Status, r.Error = StatusUnauthorized, fmt.Sprintf("GET /models answered %d", status)
		env := "SKILLROUTER_" + strings.ToUpper(strings.ReplaceAll(c.cfg.KeyName, ".", "_"))
		if c.cfg.Header.Get("Authorization") != "" || c.cfg.Header.Get("X-Api-Key") != "" {
			r.Hint = "the upstream rejects the configured key (" + c.cfg.KeyName + ")"
		} else {
			r.Hint = "the upstream wants a key: clients must send their own (Claude Code and the SDKs do), or set " + c.cfg.KeyName + " (" + env + ")"
			r.ClientKeys = true
		}
	case status == http.StatusNotFound:
		r.Status, r.Error = StatusNotFound, "GET /models answered 404"
		r.Hint = c.suggest(ctx)
	case status == http.StatusLoopDetected:
		r.Status, r.Error = StatusError, "GET /models answered 508"
		r.Hint = redact.Stripped(c.base) + " sends requests back to this proxy (a loop): " + c.cfg.Name + " must be the model server's address"
	default:
		r.Status, r.Error = StatusError, fmt.Sprintf("GET /models answered %d", status)
	}
	return r
}

// suggest guesses the base URL meant when /models is not found: the URL
// with /v1 added, or cut back to its /v1 when a whole endpoint was pasted.
// A guess that answers with a model list is said with confidence.
func (c *Checker) suggest(ctx context.Context) string {
	p := strings.TrimRight(c.base.Path, "/")
	var guess string
	switch {
	case strings.HasSuffix(p, "/v1"):
		return "is " + redact.Stripped(c.base) + " an OpenAI-compatible API?"
	case strings.Contains(p, "/v1/"):
		guess = p[:strings.Index(p, "/v1/")+3]
	default:
		guess = p + "/v1"
	}
	u := *c.base
	u.Path, u.RawPath = guess, ""
	if status, body, err := c.get(ctx, c.modelsURL(&u)); err == nil && status/100 == 2 {
		if _, ok := modelIDs(body); ok {
			return "did you mean " + redact.Stripped(&u) + "?"
		}
	}
	return "did you mean " + redact.Stripped(&u) + "? (the base URL usually ends in /v1)"
}

func (c *Checker) modelsURL(base *url.URL) string {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/models"
	u.RawPath = ""
	return u.String()
}

func (c *Checker) get(ctx context.Context, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// modelIDs reads an OpenAI model list ({"data":[{"id":...}]}), sorted.
func modelIDs(body []byte) ([]string, bool) {
	var list struct {
		Data *[]struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || list.Data == nil {
		return nil, false
	}
	ids := make([]string, 0, len(*list.Data))
	for _, m := range *list.Data {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return ids, true
}

// cause is why a request got no answer, without the URL net/http wraps it in.
func cause(err error) string {
	var dns *net.DNSError
	var ne net.Error
	var sys syscall.Errno
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timed out"
	case errors.As(err, &dns):
		return dns.Err + " (" + dns.Name + ")"
	case errors.As(err, &sys):
		return sys.Error()
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
