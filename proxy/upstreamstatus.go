package proxy

import "github.com/skillrouter/skillrouter/upstreamcheck"

// UpstreamCheck reports the last check of an upstream (an
// *upstreamcheck.Checker). /readyz shows it but never waits for it:
// readiness is about the proxy itself, and a load balancer should not take
// every replica out because the model server blipped.
type UpstreamCheck interface {
	Last() upstreamcheck.Result
}

// upstreamStatus is the last check of every configured upstream, for /readyz.
func (s *Server) upstreamStatus() []upstreamcheck.Result {
	if len(s.cfg.UpstreamChecks) == 0 {
		return nil
	}
	out := make([]upstreamcheck.Result, len(s.cfg.UpstreamChecks))
	for i, c := range s.cfg.UpstreamChecks {
		out[i] = c.Last()
	}
	return out
}
