package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/skillrouter/skillrouter/proxy"
)

// serveDebug serves Go's profiles (/debug/pprof/) on addr, a listener of
// its own so the proxy's clients never reach them, until ctx ends. CPU and
// allocation profiles of the running proxy under load show where a routed
// request's time goes (docs/proxy.md, Performance).
func serveDebug(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("debug.listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: debugHostCheck(mux, ownHosts(addr)), ReadHeaderTimeout: 10 * time.Second}
	if beyondLoopback(ln.Addr().String()) {
		log.Warn("debug profiles are served on a non-loopback address: anyone who reaches it can read the process's memory profile", "addr", ln.Addr().String())
	}
	log.Info("debug profiles", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug profiles stopped", "err", err)
		}
	}()
	return ln.Addr().String(), nil
}

// debugHostCheck refuses requests whose Host is a name other than localhost,
// the one in debug.listen or this machine's, by the API listener's rule
// (see proxy.HostAllowed): a web page that rebinds its own name to
// 127.0.0.1 could otherwise read the profiles, and /debug/pprof/cmdline
// holds the command line (keys given as flags).
//
// A request another web page causes is refused too (an Origin, or a
// Sec-Fetch-Site of another site): such a page cannot read the answer, but
// it could start a CPU profile or trace of the whole process, blind, for as
// long as the tab stays open. go tool pprof and curl send neither; a URL
// typed into a browser says Sec-Fetch-Site: none.
func debugHostCheck(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !proxy.HostAllowed(r.Host, allowed) {
			http.Error(w, "Host not served here (protection against DNS rebinding)", http.StatusForbidden)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); r.Header.Get("Origin") != "" || site == "cross-site" || site == "same-site" {
			http.Error(w, "profiles are not served to web pages (Origin or Sec-Fetch-Site of another site)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
