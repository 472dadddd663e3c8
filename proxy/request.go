package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/wire"
)

// maxSessionKey bounds the session name taken from a header or the body;
// it is hashed, so a longer one would only cost memory.
const maxSessionKey = 1024

// sessionKey is the client's name for the conversation: X-Skillrouter-Session,
// else the request's user field, else "" (the opening alone identifies it).
func sessionKey(h http.Header, req *wire.Request) string {
	k := strings.TrimSpace(h.Get(HeaderSession))
	if k == "" {
		k = strings.TrimSpace(req.User)
	}
	if len(k) > maxSessionKey {
		k = k[:maxSessionKey]
	}
	return k
}

// readBody reads at most limit bytes of r's body from from (r.Body, or a
// reader of it).
func readBody(r *http.Request, from io.Reader, limit int64) ([]byte, *wire.Error) {
	tooLarge := &wire.Error{Status: http.StatusRequestEntityTooLarge, Kind: wire.KindInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, io.NopCloser(from), limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		var bte *bodyTimeoutError
		if errors.As(err, &bte) {
			return nil, requestTimeout(bte.limit)
		}
		var be *budgetError
		if errors.As(err, &be) {
			return nil, be.werr
		}
		if clientGone(r, err) {
			// Logged and counted 499; writeError sends nothing, and the
			// connection is closed unanswered (observe).
			return nil, &wire.Error{Status: statusClientClosed, Kind: wire.KindInvalidRequest, Code: "client_closed",
				Message: fmt.Sprintf("client went away while sending the request body: %v", err)}
		}
		return nil, wire.BadRequest("invalid_body", "", "reading request body: %v", err)
	}
	return decodeBody(r, body, limit, tooLarge)
}

// clientGone reports whether a body read failed because the client went
// away: the request's context ended, or the connection ended (closed,
// half-closed or reset) before the body its Content-Length or chunk sizes
// announced, which net/http reads as an unexpected EOF. A body framed
// wrongly (a bad chunk size) is the client's error, and one longer than
// its Content-Length is cut there and fails as JSON, not here.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// decodeBody undoes a request Content-Encoding (Codex CLI sends zstd
// bodies, other clients gzip), within limit, and drops the header: the
// body the proxy parses and forwards is the plain one.
func decodeBody(r *http.Request, body []byte, limit int64, tooLarge *wire.Error) ([]byte, *wire.Error) {
	// Every Content-Encoding field counts: a list names codings applied in
	// turn, which the proxy does not undo (415), rather than one of them.
	enc := contentCoding(r.Header)
	if enc == "" || enc == "identity" || len(body) == 0 {
		r.Header.Del("Content-Encoding")
		return body, nil // an empty body is reported as such by the parser
	}
	zr, done, err := newDecoder(enc, bytes.NewReader(body), limit)
	if errors.Is(err, errUnknownEncoding) {
		return nil, &wire.Error{Status: http.StatusUnsupportedMediaType, Kind: wire.KindInvalidRequest, Code: "unsupported_content_encoding",
			Message: fmt.Sprintf("request Content-Encoding %q is not supported (want one of gzip, deflate or zstd)", wire.Clip(enc))}
	}
	defer done()
	var plain []byte
	if err == nil {
		plain, err = io.ReadAll(io.LimitReader(zr, limit+1))
	}
	if err != nil {
		return nil, wire.BadRequest("invalid_body", "", "request body is not valid %s data: %v", enc, err)
	}
	if int64(len(plain)) > limit {
		return nil, tooLarge
	}
	r.Header.Del("Content-Encoding")
	return plain, nil
}

// contentCoding is h's Content-Encoding as newDecoder takes it: every
// field counts (a list names codings applied in turn, which no decoder
// here undoes), lower case.
func contentCoding(h http.Header) string {
	return strings.ToLower(strings.TrimSpace(strings.Join(h.Values("Content-Encoding"), ",")))
}

var errUnknownEncoding = errors.New("unknown content encoding")

// newDecoder reads src decoded from the content coding enc (gzip, deflate,
// zstd; lower case), the window a zstd frame may ask for bounded by limit
// (at least 8 MiB); done releases the decoder. errUnknownEncoding for any
// other coding.
func newDecoder(enc string, src io.Reader, limit int64) (_ io.Reader, done func(), err error) {
	done = func() {}
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		return zr, done, err
	case "deflate":
		zr, err := zlib.NewReader(src)
		return zr, done, err
	case "zstd":
		d, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max(limit, 8<<20))))
		if err != nil {
			return nil, done, err
		}
		return d, d.Close, nil
	}
	return nil, done, errUnknownEncoding
}

// headerError is a 400 about an X-Skillrouter-* request header.
func headerError(format string, a ...any) *wire.Error {
	return wire.BadRequest("invalid_skillrouter_header", "", format, a...)
}

// overrides reads the X-Skillrouter-* request headers. strategyFromArm is
// set when X-Skillrouter-Strategy named an A/B arm rather than a strategy.
func overrides(h http.Header, strategyFromArm bool) (router.Overrides, *wire.Error) {
	var ov router.Overrides
	if v := strings.TrimSpace(h.Get(HeaderStrategy)); v != "" && !strategyFromArm {
		st := router.Strategy(strings.ToLower(v))
		if !router.ValidStrategy(st) {
			return ov, headerError("%s: unknown strategy %q (want %s)", HeaderStrategy, wire.Clip(v), router.StrategyList())
		}
		ov.Strategy = st
	}
	if v := strings.TrimSpace(h.Get(HeaderTopK)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return ov, headerError("%s: %q is not a non-negative integer", HeaderTopK, wire.Clip(v))
		}
		ov.TopK = &n
	}
	if v := strings.TrimSpace(h.Get(HeaderDisable)); v != "" {
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return ov, headerError("%s: %q is not a boolean", HeaderDisable, wire.Clip(v))
		}
		ov.Disable = b
	}
	if v := strings.TrimSpace(h.Get(HeaderCatalog)); v != "" {
		m := router.CatalogMode(strings.ToLower(v))
		if !router.ValidCatalogMode(m) {
			return ov, headerError("%s: unknown catalog mode %q (want %s)", HeaderCatalog, wire.Clip(v), router.CatalogModeList())
		}
		ov.CatalogMode = m
	}
	return ov, nil
}
