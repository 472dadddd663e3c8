package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
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
	// HeaderUsageTotal is every round's usage summed, as JSON in the API's
	// field names, when tool rounds ran: what the request cost, where the
	// answer's usage is the last round's (see wire.Usage).
	HeaderUsageTotal = "X-Skillrouter-Usage-Total"
	// HeaderToolsWithheld lists the client tools exec.allowed_tools gated
	// and no active skill enabled (comma-separated; omitted when none).
	HeaderToolsWithheld = "X-Skillrouter-Tools-Withheld"
	// HeaderRequestID is on every answer: the id the request's log line
	// has (request_id), the one to quote when reporting a problem.
	HeaderRequestID = "X-Skillrouter-Request-Id"
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

// hopNames lists h's hop-by-hop headers, canonical: hopHeaders and those
// h's Connection names.
func hopNames(h http.Header) []string {
	conn := h["Connection"]
	if len(conn) == 0 {
		return hopHeaders // callers only read it
	}
	names := slices.Clone(hopHeaders)
	for _, v := range conn {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				names = append(names, textproto.CanonicalMIMEHeaderKey(f))
			}
		}
	}
	return names
}

// removeHopHeaders deletes hop-by-hop headers, including those named in Connection.
func removeHopHeaders(h http.Header) {
	for _, k := range hopNames(h) {
		h.Del(k)
	}
}

// earlierHops are the request headers that describe how a request reached
// the proxy: the browser's Cookie, the standard and de facto forwarding
// headers, and the client-address headers CDNs and load balancers add
// (Cloudflare, Akamai, Fastly, nginx, ingress controllers). Canonical.
var earlierHops = []string{
	"Cookie", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
	"X-Original-Forwarded-For", "X-Real-Ip", "X-Client-Ip", "X-Cluster-Client-Ip", "True-Client-Ip",
	"Cf-Connecting-Ip", "Cf-Connecting-Ipv6", "Fastly-Client-Ip",
}

// keptHops is earlierHops less the names forward lets through (any case).
func keptHops(forward []string) []string {
	return slices.DeleteFunc(slices.Clone(earlierHops), func(k string) bool {
		return slices.ContainsFunc(forward, func(f string) bool { return textproto.CanonicalMIMEHeaderKey(f) == k })
	})
}

// upstreamRequestHeader builds the header sent upstream from the client's:
// everything but hop-by-hop headers, the proxy's own X-Skillrouter-*
// controls, Origin, and the earlier hops' headers named in hops
// (keptHops).
func upstreamRequestHeader(in http.Header, hops []string) http.Header {
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
	// The proxy answered the browser's CORS itself (guard.go): the call it
	// makes is a server's, and an upstream that sees a browser's Origin
	// applies its browser policy to it (Anthropic answers 401 unless
	// anthropic-dangerous-direct-browser-access is set).
	out.Del("Origin")
	// The same for what belongs to the hops before this one. A browser's
	// Cookie is for the site that serves the proxy (behind a shared
	// origin: the site's session), never for the upstream API, another
	// company's server. Forwarding headers describe how the request
	// reached this proxy (the end user's address, an ingress's names); the
	// upstream call is a new request from here, and they would hand the
	// users' addresses to the model provider.
	for _, k := range hops {
		out.Del(k)
	}
	// The client's 100-continue was answered when the proxy read its body;
	// forwarded, the transport would wait for the upstream's on every round.
	out.Del("Expect")
	// Set by net/http from the outgoing body and URL.
	out.Del("Content-Length")
	out.Del("Host")
	return out
}

// copyResponseHeader copies upstream response headers to the client, minus
// hop-by-hop ones. Content-Length is kept only when keepLength is set
// (the body is relayed byte for byte).
//
// The upstream's Access-Control-* headers stay upstream: the proxy answers
// a browser's CORS itself (guard.go), and the public APIs' own (allowing
// every origin) would replace that answer. So do its X-Skillrouter-*
// headers: they are the proxy's report of its own decision, and an
// upstream's (another skillrouter behind this one, or any server) would
// replace or contradict it. Vary adds to the proxy's (Origin) instead of
// replacing it.
//
// Hop-by-hop headers are left out of the copy rather than deleted from dst
// after it: dst holds the proxy's own headers already, and an upstream's
// Connection naming them (Connection: X-Skillrouter-Selected, Vary) would
// have deleted them.
func copyResponseHeader(dst, src http.Header, keepLength bool) {
	hop := hopNames(src)
	for k, vv := range src {
		switch {
		case strings.HasPrefix(k, "Access-Control-"), strings.HasPrefix(k, skillrouterPrefix), slices.Contains(hop, k):
			continue
		case k == "Vary":
			dst[k] = append(dst[k], vv...)
			continue
		}
		dst[k] = append([]string(nil), vv...)
	}
	if !keepLength {
		dst.Del("Content-Length")
	}
}

// headerIdempotencyKey names one request (an SDK that sends it keeps it
// across its own retries of that request).
const headerIdempotencyKey = "Idempotency-Key"

// resent returns the client's request as the proxy sends it again with
// another body: a hidden round's follow-up (tag "round-N"), the stored-state
// repair's retry ("repair") or the resend without the proxy's ask for usage
// ("without-usage"). A key names one request, and a server that
// honours it answers the same key with another body with 422 or with the
// first answer (draft-ietf-httpapi-idempotency-key-header), so each of
// these gets its own key, derived from the client's: the client's retry of
// the whole request derives the same ones.
func resent(in *http.Request, tag string) *http.Request {
	k := in.Header.Get(headerIdempotencyKey)
	if k == "" {
		return in
	}
	out := in.WithContext(in.Context()) // a shallow copy
	out.Header = in.Header.Clone()
	out.Header.Set(headerIdempotencyKey, k+"/"+tag)
	return out
}

// forRound is the request a tool round sends: the client's for the first,
// resent (tag "round-N") for the hidden rounds' follow-ups.
func forRound(in *http.Request, round int) *http.Request {
	if round == 0 {
		return in
	}
	return resent(in, "round-"+strconv.Itoa(round))
}

// via is the element this process adds to the Via header of every request
// it sends upstream (RFC 9110 7.6.3). A request that comes back carrying
// it (upstream.url pointing at the proxy itself, a loop of proxies) is
// refused with 508 instead of being sent round again until the
// connection limit.
var via = func() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "1.1 skillrouter-" + hex.EncodeToString(b[:])
}()

// Via is the Via element this process's upstream requests carry, for the
// other senders of requests upstream (the upstream check).
func Via() string { return via }

// looped reports whether h's Via names this process: the request is one
// of its own, come back.
func looped(h http.Header) bool {
	for _, v := range h.Values("Via") {
		if strings.Contains(v, via[len("1.1 "):]) {
			return true
		}
	}
	return false
}
