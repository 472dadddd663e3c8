package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// Request headers that steer the proxy (never forwarded upstream).
const (
	HeaderStrategy = "X-Skillrouter-Strategy"
	HeaderTopK     = "X-Skillrouter-Top-K"
	HeaderDisable  = "X-Skillrouter-Disable"
	HeaderCatalog  = "X-Skillrouter-Catalog"
	HeaderArmIn    = "X-Skillrouter-Arm" // also sent back: the arm that served the request
	// HeaderSession names the conversation: tier-3 output directories are
	// keyed by it together with the conversation's opening. Without it the
	// request's "user" field is used, if any.
	HeaderSession = "X-Skillrouter-Session"
)

// Response headers describing the routing decision.
const (
	HeaderSelected       = "X-Skillrouter-Selected"
	HeaderFallback       = "X-Skillrouter-Fallback"
	HeaderFallbackReason = "X-Skillrouter-Fallback-Reason"
	HeaderError          = "X-Skillrouter-Error"
	HeaderArm            = "X-Skillrouter-Arm"
	HeaderAddedTokens    = "X-Skillrouter-Added-Tokens"
	HeaderToolRounds     = "X-Skillrouter-Tool-Rounds"
	HeaderRoundsExceeded = "X-Skillrouter-Tool-Rounds-Exhausted"
	// HeaderToolsWithheld lists the client tools exec.allowed_tools gated
	// and no active skill enabled (comma-separated; omitted when none).
	HeaderToolsWithheld = "X-Skillrouter-Tools-Withheld"
)

// skillrouterPrefix marks the proxy's own headers, canonical form.
const skillrouterPrefix = "X-Skillrouter-"

// hopHeaders are hop-by-hop headers (RFC 9110 §7.6.1) that a proxy must not forward.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection", // non-standard, sent by old clients
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// removeHopHeaders deletes hop-by-hop headers, including those named in Connection.
func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// upstreamRequestHeader builds the header sent upstream from the client's:
// everything but hop-by-hop headers and the proxy's own X-Skillrouter-* controls.
func upstreamRequestHeader(in http.Header) http.Header {
	out := in.Clone()
	if out == nil {
		out = http.Header{}
	}
	removeHopHeaders(out)
	for k := range out {
		if strings.HasPrefix(k, skillrouterPrefix) {
			delete(out, k)
		}
	}
	// Set by net/http from the outgoing body and URL.
	out.Del("Content-Length")
	out.Del("Host")
	return out
}

// copyResponseHeader copies upstream response headers to the client, minus
// hop-by-hop ones. Content-Length is kept only when keepLength is set
// (the body is relayed byte for byte).
func copyResponseHeader(dst, src http.Header, keepLength bool) {
	for k, vv := range src {
		dst[k] = append([]string(nil), vv...)
	}
	removeHopHeaders(dst)
	if !keepLength {
		dst.Del("Content-Length")
	}
}
