package main

// The HTTP side of `router serve`: server timeouts, the connection cap,
// the separate metrics listener, access control and the shutdown sequence
// (grace, then Drain, then close). docs/security.md and docs/proxy.md
// describe the settings.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillrouter/skillrouter/internal/lognotice"
	"github.com/skillrouter/skillrouter/proxy"
)

// defaultMaxConnections caps client connections; capConnections lowers it
// to what the open-file limit allows.
const defaultMaxConnections = 1024

// fdReserve are file descriptors kept for everything but client
// connections: log files, the library, embedder and metrics connections,
// and connections being refused (maxRefusing).
const fdReserve = 64 + maxRefusing

// maxRefusing bounds the connections being answered 503 at once; beyond
// it a connection over the cap is closed without an answer, so a flood of
// connections cannot turn the refusals themselves into descriptor
// exhaustion.
const maxRefusing = 32

// capConnections fits max to the process's open-file limit: each client
// connection may hold a second descriptor upstream while it streams.
func capConnections(limit int, log *slog.Logger) int {
	files, ok := openFileLimit()
	if !ok || files > 1<<30 {
		return limit
	}
	fit := max((int(files)-fdReserve)/2, 8)
	if fit < limit {
		log.Warn("server.max_connections lowered to fit the open-file limit (raise it with ulimit -n)",
			"max_connections", fit, "configured", limit, "open_file_limit", files)
		return fit
	}
	return limit
}

// ownHosts are the Host names a listener on listen serves besides IP
// addresses and localhost: the listen address's name and this machine's,
// which a rebinding attacker controls neither of.
func ownHosts(listen string) []string {
	var hosts []string
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" && net.ParseIP(h) == nil {
		hosts = append(hosts, h)
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
		if short, _, ok := strings.Cut(h, "."); ok {
			hosts = append(hosts, short)
		}
	}
	return hosts
}

// accessConfig is the proxy's Access from the server and auth sections;
// the API keys file is read here (one key a line, # comments).
func accessConfig(cfg config, listen string) (proxy.Access, error) {
	a := proxy.Access{
		AllowedOrigins: cfg.Server.AllowedOrigins,
		AllowedHosts:   append([]string(nil), cfg.Server.AllowedHosts...),
		APIKeys:        append([]string(nil), cfg.Auth.APIKeys...),
		AdminToken:     cfg.Auth.AdminToken,
		AdminTokenOnly: !cfg.Auth.AdminLoopback,
		ClientIDSecret: cfg.Auth.ClientIDSecret,
		BodyTimeout:    cfg.Server.BodyTimeout,
		WriteTimeout:   cfg.Server.WriteTimeout,
	}
	a.AllowedHosts = append(a.AllowedHosts, ownHosts(listen)...)
	keys, err := clientKeys(cfg)
	a.APIKeys = keys
	return a, err
}

// clientKeys are auth.api_keys and the keys of auth.api_keys_file (one a
// line; # starts a comment, on a line of its own or after a key), read
// now: at start, and again on SIGHUP. A line with more than a key and a
// comment is an error: "sk-a sk-b" or "sk-a note" would otherwise be one
// key no client sends.
func clientKeys(cfg config) ([]string, error) {
	keys := append([]string(nil), cfg.Auth.APIKeys...)
	f := cfg.Auth.APIKeysFile
	if f == "" {
		return keys, nil
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return keys, fmt.Errorf("auth.api_keys_file: %w", err)
	}
	n := len(keys)
	for i, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case len(fields) == 1 || strings.HasPrefix(fields[1], "#"):
			keys = append(keys, fields[0])
		default:
			return keys, fmt.Errorf("auth.api_keys_file %s:%d: one key a line (a comment starts with #)", f, i+1)
		}
	}
	// A file with no key is a mistake (emptied, half written), even beside
	// auth.api_keys: read again on SIGHUP, it must not revoke every key it
	// held.
	if len(keys) == n {
		return keys, fmt.Errorf("auth.api_keys_file %s: no key in it", f)
	}
	return keys, nil
}

// httpServer is the API server with the configured timeouts. There is no
// ReadTimeout or WriteTimeout: either would cut long streams (a read
// deadline left on the connection also cancels the request's context);
// the body deadline is set per request by the proxy and lifted once the
// body is read, and the proxy bounds each write (server.write_timeout)
// rather than the whole response.
func httpServer(cfg config, h http.Handler, log *slog.Logger, base context.Context) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// limitListener caps the connections open at once. Over the cap, a new
// connection is answered "503 Service Unavailable" (the API's error JSON,
// Retry-After) and closed at once, so an accept backlog of slow or idle
// sockets can neither exhaust the file descriptors (accept: too many open
// files) nor hold new clients in a queue without an answer.
type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing atomic.Int64
	// closed is when a connection last closed (unix nanos; the start at
	// first): a server at the cap that still closes connections is busy,
	// one that closes none is stuck.
	closed  atomic.Int64
	refused prometheus.Counter
	log     *slog.Logger
	name    string

	notice lognotice.Every
}

// apiListener is the API's listener: at most limit connections open
// (limitListener), each closed with a reset once a write to it met
// server.write_timeout (proxy.ResetStalled), so a client that stopped
// reading does not leave its unread data in the kernel.
func apiListener(ln net.Listener, limit int, log *slog.Logger, reg *prometheus.Registry) net.Listener {
	return newLimitListener(proxy.ResetStalled(ln), limit, "api", log, reg)
}

func newLimitListener(ln net.Listener, limit int, name string, log *slog.Logger, reg *prometheus.Registry) *limitListener {
	l := &limitListener{Listener: ln, max: int64(limit), log: log, name: name, notice: lognotice.Every{Interval: 10 * time.Second}}
	l.closed.Store(time.Now().UnixNano())
	l.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "skillrouter", Name: "connections_refused_total",
		Help:        "Client connections answered 503 and closed because server.max_connections were open.",
		ConstLabels: prometheus.Labels{"listener": name},
	})
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "skillrouter", Name: "connections_open",
		Help:        "Client connections open.",
		ConstLabels: prometheus.Labels{"listener": name},
	}, func() float64 { return float64(l.open.Load()) })
	if reg != nil {
		_ = reg.Register(l.refused)
		_ = reg.Register(open)
	}
	return l
}

// overloaded is what a connection over the cap gets.
const overloaded = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Inc()
		l.noteRefused()
		if l.refusing.Add(1) > maxRefusing {
			l.refusing.Add(-1)
			_ = c.Close()
			continue
		}
		alive := time.Since(time.Unix(0, l.closed.Load())) < livenessWindow
		go func() {
			defer l.refusing.Add(-1)
			refuse(c, alive)
		}()
	}
}

// refuse answers an over-the-cap connection and closes it, within half a
// second whatever the client does.
//
// A liveness probe (GET /healthz) gets 200 even so while alive (a
// connection closed within livenessWindow): a pod whose connections are all
// taken is busy, not dead, and failing its liveness probe would get the
// busiest pods restarted, their streams cut and their load moved onto the
// others; one where nothing has closed for that long is stuck, and its
// probe fails. Readiness (/readyz) gets the 503: a saturated pod may well
// be taken out of rotation for a while.
func refuse(c net.Conn, alive bool) {
	body := `{"error":{"message":"too many connections: server.max_connections reached; retry shortly","type":"server_error","param":null,"code":"too_many_connections"}}`
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	// Read what the client sent first (a bounded peek), so closing does not
	// reset the connection before the answer is read.
	br := bufio.NewReaderSize(c, 4096)
	if _, err := br.Peek(1); err == nil {
		if head, _ := br.Peek(len(livenessLine) + 1); alive && isLiveness(head) {
			_, _ = fmt.Fprintf(c, aliveAnswer, len(aliveBody), aliveBody)
			_ = c.Close()
			return
		}
	}
	_, _ = fmt.Fprintf(c, overloaded, len(body), body)
	_ = c.Close()
}

// livenessWindow: a server at the connection cap answers liveness while a
// connection closed this recently (streams end, idle ones time out).
const livenessWindow = time.Minute

const (
	livenessLine = "GET /healthz"
	aliveAnswer  = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
	aliveBody    = `{"status":"ok"}`
)

// isLiveness reports whether a request starts with GET /healthz (then a
// space or a query).
func isLiveness(head []byte) bool {
	return len(head) > len(livenessLine) && string(head[:len(livenessLine)]) == livenessLine &&
		(head[len(livenessLine)] == ' ' || head[len(livenessLine)] == '?')
}

// noteRefused logs the first refusal, then at most one line per 10 s with
// the count since the last.
func (l *limitListener) noteRefused() {
	if n, due := l.notice.Note(); due {
		l.log.Warn("connection limit reached: new connections are answered 503 and closed (server.max_connections)",
			"listener", l.name, "max_connections", l.max, "refused", n)
	}
}

type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.closed.Store(time.Now().UnixNano())
	})
	return err
}

// metricsServer serves /metrics alone on addr (server.metrics_listen).
type metricsServer struct {
	hs  *http.Server
	ln  net.Listener
	err chan error
}

func startMetrics(addr string, h http.Handler, log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server.metrics_listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	m := &metricsServer{ln: ln, err: make(chan error, 1), hs: &http.Server{
		Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() { m.err <- m.hs.Serve(newLimitListener(ln, 64, "metrics", log, nil)) }()
	return m, nil
}

func (m *metricsServer) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m.hs.Shutdown(ctx) != nil {
		m.hs.Close()
	}
}

// shutdown stops hs: in-flight requests get grace to finish; then the
// proxy ends the rest (streams get their API's error event, logged with
// outcome shutdown) and the connections are closed.
func shutdown(hs *http.Server, srv *proxy.Server, grace time.Duration, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err == nil {
		// What the requests left to do in the background, within the grace.
		if srv.Finish(sctx) != nil {
			log.Warn("shutdown grace over: background work cancelled (hidden rounds' stored responses left undeleted)")
		}
		return
	}
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown grace over: ending the requests still in flight", "in_flight", srv.InFlight(), "grace", grace)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	if err := srv.Drain(dctx); err != nil {
		log.Warn("requests still running after the drain; closing their connections", "in_flight", srv.InFlight())
	}
	hs.Close()
	_ = srv.Finish(dctx) // Drain cancelled it: returns as soon as it has stopped
}
