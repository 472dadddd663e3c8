package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/skillrouter/skillrouter/internal/statuswriter"
	"github.com/skillrouter/skillrouter/wire"
)

// Access is who may use the proxy (docs/security.md). The zero value keeps
// the browser protections on (no Origin allowed, Host names limited to IP
// literals and localhost) and asks no credentials.
type Access struct {
	// AllowedOrigins lists the browser origins ("https://app.example") whose
	// requests are served, with CORS headers; "*" allows any. A request
	// with any other Origin is refused (403), so a web page cannot drive
	// the proxy with the operator's key; requests without Origin (SDKs,
	// curl, servers) are not affected.
	AllowedOrigins []string
	// AllowedHosts lists the Host names served besides IP literals,
	// "localhost" and *.localhost ("*" any; "*.example.com" its subdomains),
	// against DNS rebinding: a page of evil.example resolving to 127.0.0.1
	// sends Host: evil.example. Other names get 403.
	AllowedHosts []string
	// APIKeys, when not empty, are the keys clients must present:
	// "Authorization: Bearer KEY", or "x-api-key: KEY" on Anthropic
	// requests (/v1/messages..., or any with anthropic-version). The client's key is removed before the
	// request goes upstream, where the upstream key (Config.APIKey) is
	// sent. /healthz, /readyz and CORS preflights need none.
	APIKeys []string
	// AdminToken, when set, is the bearer token the admin endpoints
	// (POST /v1/skills/reload) require; when empty they are served to
	// loopback clients only.
	AdminToken string
	// AdminTokenOnly refuses the admin endpoints to loopback clients too
	// while AdminToken is empty: behind a sidecar proxy (Istio, Linkerd)
	// every client arrives from a loopback address.
	AdminTokenOnly bool
	// ClientIDSecret keys the digest that names a client key in the access
	// log and binds MCP sessions (ClientID). Empty: a random secret of the
	// process, so the same key gets another name after a restart and on
	// each replica. Without a secret, whoever reads the log could test
	// guesses of a short key against its name.
	ClientIDSecret string
	// BodyTimeout bounds reading a request body (408 when exceeded); 0:
	// DefaultBodyTimeout, negative: none.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write to the client: a client that
	// accepts nothing for that long (it stopped reading) is disconnected
	// and logged 499 (stalled.go); 0: DefaultWriteTimeout, negative: none.
	WriteTimeout time.Duration
}

// DefaultBodyTimeout bounds reading a request body.
const DefaultBodyTimeout = time.Minute

// adminPaths are the state-changing endpoints of the proxy itself.
var adminPaths = map[string]bool{"/v1/skills/reload": true}

// openPaths need no client key: probes.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true}

// guard is the access check of every request the proxy serves, as
// middleware (after observe, so refusals are logged and counted).
func (s *Server) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, w := c.Request(), c.Response()
		key, _ := clientKey(r)
		requestInfo(c).client = s.clientIDOf(r) // before admit drops the key
		werr := s.admit(w, r)
		if werr == errPreflightServed {
			requestInfo(c).status = http.StatusNoContent
			return nil
		}
		if werr != nil {
			info := requestInfo(c)
			info.status, info.err = werr.Status, werr.Message
			writeError(w, apiFor(r), werr)
			return nil
		}
		if key != "" && r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") == "" {
			requestInfo(c).clientKey = key // admit dropped it: the proxy's own key (presence.go)
		}
		defer unwrapBody(r)
		return next(c)
	}
}

// Protect applies the proxy's access checks (Access) to a handler served
// beside it on the same listener, such as MCP at /mcp; its requests, and
// the refusals, are logged and counted like the proxy's own.
func (s *Server) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := s.clientIDOf(r)
		werr := s.admit(w, r)
		if werr == errPreflightServed {
			return
		}
		info := &reqInfo{outcome: outcomeComplete, client: id}
		info.begin(r, w.Header())
		if werr != nil {
			info.status, info.err = werr.Status, werr.Message
			s.observeBeside(r, info, 0)
			writeError(w, chatAPI{}, werr)
			return
		}
		defer unwrapBody(r)
		if id != "" {
			r = r.WithContext(context.WithValue(r.Context(), clientIDKey{}, id))
		}
		sw := &statuswriter.Writer{ResponseWriter: s.writeBound(w)}
		h.ServeHTTP(sw, r)
		info.status = sw.Status
		if info.status == 0 {
			info.status = http.StatusOK // net/http's answer to a handler that wrote nothing
		}
		if r.Context().Err() != nil && sw.Status == 0 {
			info.status, info.outcome = statusClientClosed, outcomeClientClosed
		}
		s.observeBeside(r, info, time.Since(start))
	})
}

// observeBeside counts and logs a request a handler beside the proxy
// served (Protect): one line, as the proxy's own requests get.
func (s *Server) observeBeside(r *http.Request, info *reqInfo, elapsed time.Duration) {
	s.metrics.observeRequest(info, elapsed)
	attrs := append(s.whoAttrs(r, info), slog.String("method", r.Method), slog.String("path", wire.Clip(r.URL.Path)),
		slog.Int("status", info.status), slog.String("outcome", info.outcome), slog.Float64("duration_ms", ms(elapsed)))
	if info.err != "" {
		attrs = append(attrs, slog.String("error", info.err))
	}
	level := slog.LevelInfo
	if info.status >= 500 {
		level = slog.LevelWarn
	}
	s.log.LogAttrs(context.WithoutCancel(r.Context()), level, "request", attrs...)
}

// errPreflightServed: admit answered a CORS preflight itself.
var errPreflightServed = &wire.Error{Status: http.StatusNoContent}

// admit checks r against Access: Host, Origin (answering a preflight of
// an allowed origin), credentials, admin rules; and starts the body read
// deadline. It returns the refusal, if any.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) *wire.Error {
	a := &s.cfg.Access
	keys := s.apiKeys() // one set for the whole check: SetAPIKeys may replace it meanwhile
	if looped(r.Header) {
		return &wire.Error{Status: http.StatusLoopDetected, Kind: wire.KindServer, Code: "loop_detected",
			Message: "this request was sent by this proxy itself: its upstream (upstream.url or upstream.anthropic_url) points back at it; set it to the model server's address"}
	}
	if !s.hostAllowed(r.Host) {
		return forbidden("host_not_allowed", "Host %q is not served here: add it to server.allowed_hosts (protection against DNS rebinding)", wire.Clip(r.Host))
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !originAllowed(a.AllowedOrigins, origin) {
			return forbidden("origin_not_allowed", "requests from the web origin %q are refused: add it to server.allowed_origins to allow it", wire.Clip(origin))
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
				h.Set("Access-Control-Allow-Headers", rh)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return errPreflightServed
		}
		h.Set("Access-Control-Expose-Headers", "*")
	} else if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && !openPaths[r.URL.Path] && !slices.Contains(a.AllowedOrigins, "*") {
		// A browser sends no Origin with a GET another page causes (an
		// image, a script, a link followed) but says where it came from.
		// Probes stay open to a dashboard's links; allowed_origins "*"
		// lets every page in.
		return forbidden("origin_not_allowed", "requests caused by a page of another site without an Origin (an image, a script, a link followed; Sec-Fetch-Site: %s) are refused: call the proxy with fetch from an origin in server.allowed_origins, or allow every page with \"*\"", site)
	}
	if oauthProbe(r.URL.Path) {
		return noOAuth(len(keys) > 0)
	}
	if adminPaths[r.URL.Path] {
		if werr := s.adminAllowed(r, keys); werr != nil {
			return werr
		}
	} else if len(keys) > 0 && !openPaths[r.URL.Path] {
		if !clientKeyValid(r, keys) {
			e := &wire.Error{Status: http.StatusUnauthorized, Kind: wire.KindInvalidRequest, Code: "invalid_api_key",
				Message: "missing or invalid API key: send one of the keys of auth.api_keys as " + keyHeaders(r)}
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillrouter"`)
			return e
		}
	}
	// The client's key was for the proxy: it never goes upstream.
	if len(keys) > 0 || (adminPaths[r.URL.Path] && a.AdminToken != "") {
		r.Header.Del("Authorization")
		r.Header.Del("X-Api-Key")
		// Azure's SDKs send the key as api-key too: the proxy's own key
		// must not ride upstream in it.
		if v := r.Header.Get("Api-Key"); v != "" && matchesAny(strings.TrimSpace(v), keys) {
			r.Header.Del("Api-Key")
		}
	}
	s.bodyDeadline(w, r)
	return nil
}

// oauthMetadata are the OAuth discovery documents MCP hosts ask for after
// a 401 from /mcp: protected resource metadata (RFC 9728), authorization
// server metadata (RFC 8414) and OpenID discovery, at the root or with
// the resource's path appended (/.well-known/oauth-protected-resource/mcp).
var oauthMetadata = []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}

// oauthProbe reports whether path is where a host looks for OAuth: the
// discovery documents, OpenID's form for /mcp, and /register, the client
// registration endpoint MCP 2025-03-26 has hosts assume when discovery
// finds nothing (Claude Code posts there). They were refused 401 with
// keys set, which sent hosts down the OAuth path: Claude Code reported
// "Dynamic Client Registration rejected (HTTP 401)".
func oauthProbe(path string) bool {
	if path == "/register" || path == "/mcp/.well-known/openid-configuration" {
		return true
	}
	for _, p := range oauthMetadata {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// noOAuth answers an OAuth probe, without asking for a key: 404, there is
// no OAuth here, naming how the key is sent when there is one to send.
func noOAuth(keys bool) *wire.Error {
	msg := "this server has no OAuth and asks for no key"
	if keys {
		msg = "this server has no OAuth: it takes a client key of auth.api_keys, sent as Authorization: Bearer KEY " +
			`(Claude Code: claude mcp add --transport http NAME URL --header "Authorization: Bearer KEY"; ` +
			"Codex: bearer_token_env_var under [mcp_servers.NAME])"
	}
	return &wire.Error{Status: http.StatusNotFound, Kind: wire.KindInvalidRequest, Code: "not_found", Message: msg}
}

func forbidden(code, format string, args ...any) *wire.Error {
	return &wire.Error{Status: http.StatusForbidden, Kind: wire.KindInvalidRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// hostAllowed reports whether the Host header names this server: an IP
// literal, localhost, or a configured name.
func (s *Server) hostAllowed(hostport string) bool {
	return HostAllowed(hostport, s.cfg.Access.AllowedHosts)
}

// HostAllowed reports whether a request's Host may be served: no Host
// (HTTP/1.0), an IP address, localhost and *.localhost, or one of allowed
// ("*", a name, "*.suffix"). Any other name may be a web page that rebound
// its own name to this machine (DNS rebinding) to read the answers.
func HostAllowed(hostport string, allowed []string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: no browser sends that
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSuffix(a, "."))
		switch {
		case a == "*" || a == host:
			return true
		case strings.HasPrefix(a, "*.") && strings.HasSuffix(host, a[1:]):
			return true
		}
	}
	return false
}

func originAllowed(allowed []string, origin string) bool {
	return slices.Contains(allowed, "*") || slices.ContainsFunc(allowed, func(a string) bool {
		return strings.EqualFold(strings.TrimSuffix(a, "/"), origin)
	})
}

// ClientID names the client key a request served through Protect
// presented, as a digest (never the key), "" when the proxy takes no client
// keys: what a handler beside the proxy binds a client's state to, such as
// MCP sessions, so that one key's holder cannot use or end another's.
func (s *Server) ClientID(r *http.Request) string {
	id, _ := r.Context().Value(clientIDKey{}).(string)
	return id
}

type clientIDKey struct{}

// clientIDOf is ClientID's value, read before admit drops the proxy's own
// key from the request.
func (s *Server) clientIDOf(r *http.Request) string {
	if len(s.apiKeys()) == 0 {
		return ""
	}
	key, ok := clientKey(r)
	if !ok {
		return ""
	}
	mac := hmac.New(sha256.New, s.clientIDSecret)
	mac.Write([]byte(key))
	return hex.EncodeToString(mac.Sum(nil)[:12])
}

// clientKey returns the key the client presented: Bearer, or x-api-key on
// Anthropic requests (where Claude Code and the Anthropic SDKs send it).
func clientKey(r *http.Request) (string, bool) {
	if v, ok := bearer(r); ok {
		return v, true
	}
	if anthropicRequest(r) {
		if v := r.Header.Get("X-Api-Key"); v != "" {
			return v, true
		}
	}
	return "", false
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header; the
// scheme's name is compared without case (RFC 9110, 11.1).
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func keyHeaders(r *http.Request) string {
	if anthropicRequest(r) {
		return "x-api-key: KEY or Authorization: Bearer KEY"
	}
	return "Authorization: Bearer KEY"
}

// apiKeys are the client keys in force.
func (s *Server) apiKeys() []string { return *s.keys.Load() }

// SetAPIKeys replaces the client keys (a key file read again, on SIGHUP):
// requests from then on are checked against keys. An empty list is
// refused: it would open a server that asked for keys to anyone.
func (s *Server) SetAPIKeys(keys []string) error {
	if len(keys) == 0 {
		return errors.New("no client key: the keys in force stay")
	}
	if len(s.apiKeys()) == 0 {
		return errors.New("the server was started without client keys: start it with auth.api_keys or auth.api_keys_file to check them")
	}
	keys = slices.Clone(keys)
	s.keys.Store(&keys)
	return nil
}

// clientKeyValid compares the presented key with every one of keys in
// constant time (hashes of equal length, no early exit).
func clientKeyValid(r *http.Request, keys []string) bool {
	key, ok := clientKey(r)
	if !ok || key == "" {
		return false
	}
	return matchesAny(key, keys)
}

func matchesAny(key string, keys []string) bool {
	got := sha256.Sum256([]byte(key))
	match := 0
	for _, k := range keys {
		want := sha256.Sum256([]byte(k))
		match |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	return match == 1
}

// adminAllowed: the admin token when one is set; else loopback clients
// only (with a client key too when keys are set).
func (s *Server) adminAllowed(r *http.Request, keys []string) *wire.Error {
	a := &s.cfg.Access
	if a.AdminToken != "" {
		key, ok := bearer(r)
		if !ok || !matchesAny(key, []string{a.AdminToken}) {
			return &wire.Error{Status: http.StatusUnauthorized, Kind: wire.KindInvalidRequest, Code: "invalid_admin_token",
				Message: r.URL.Path + " is an admin endpoint: send auth.admin_token as Authorization: Bearer TOKEN"}
		}
		return nil
	}
	if a.AdminTokenOnly {
		return forbidden("admin_token_required", "%s is an admin endpoint, served only with auth.admin_token (auth.admin_loopback is off: behind a sidecar proxy every client looks local)", r.URL.Path)
	}
	if !loopback(r.RemoteAddr) {
		return forbidden("admin_loopback_only", "%s is an admin endpoint, served to loopback clients only while auth.admin_token is not set", r.URL.Path)
	}
	if len(keys) > 0 && !clientKeyValid(r, keys) {
		return &wire.Error{Status: http.StatusUnauthorized, Kind: wire.KindInvalidRequest, Code: "invalid_api_key",
			Message: "missing or invalid API key: send one of the keys of auth.api_keys as " + keyHeaders(r)}
	}
	return nil
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bodyDeadline bounds reading the request body to BodyTimeout: a client
// that trickles its body (one byte every few seconds) holds a connection
// and a file descriptor no longer than that, and gets 408. The deadline
// is lifted once the body has been read to its end, so a long stream is
// never cut by it; a body left unread keeps it, and net/http, discarding
// the rest after the response, gives up at the deadline too. (net/http
// sets the connection's deadlines afresh for the next request.)
func (s *Server) bodyDeadline(w http.ResponseWriter, r *http.Request) {
	d := s.cfg.Access.BodyTimeout
	if d <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return // not a net/http connection (tests with a recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, limit: d}
}

// deadlineBody is a request body under the read deadline.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	limit    time.Duration
	lifted   atomic.Bool
	timedOut atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.lift()
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
		err = &bodyTimeoutError{limit: b.limit}
	}
	return n, err
}

func (b *deadlineBody) lift() {
	if b.lifted.CompareAndSwap(false, true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// unwrapBody gives r back the body net/http made, once the handler is
// done and before net/http finishes the response (a small answer is
// written then): net/http decides from its own body types what to do
// with a body left unread. It closes the connection at once when the
// client still waits for "100 Continue" or a large part is unread (a
// 413 for a Content-Length over the limit); behind the wrapper it would
// read and discard up to 256 KiB first, waiting for the client (until the
// body deadline) to send a body that is refused anyway.
func unwrapBody(r *http.Request) {
	if db, ok := r.Body.(*deadlineBody); ok {
		r.Body = db.ReadCloser
	}
}

// bodyTimeoutError is a request body not received within the deadline.
type bodyTimeoutError struct{ limit time.Duration }

func (e *bodyTimeoutError) Error() string {
	return "request body not received within " + e.limit.String() + " (server.body_timeout)"
}

// bodyTimedOut reports whether r's body read hit the deadline.
func bodyTimedOut(r *http.Request) bool {
	db, ok := r.Body.(*deadlineBody)
	return ok && db.timedOut.Load()
}

// requestTimeout is the 408 of a body that came too slowly.
func requestTimeout(limit time.Duration) *wire.Error {
	return &wire.Error{Status: http.StatusRequestTimeout, Kind: wire.KindInvalidRequest, Code: "request_timeout",
		Message: (&bodyTimeoutError{limit: limit}).Error()}
}
