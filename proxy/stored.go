package proxy

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/responses"
)

// storedView is how a GET of a stored Responses object is shown to the
// client: raw is the upstream's JSON answer to page (the client's request
// r, or one the proxy read past an empty page with); list reads the list
// at a path with a query (the neighbours' order, after and limit) and the
// client's, nil for no query or when the read fails. An error is answered
// instead of raw: the object is the proxy's.
type storedView func(raw []byte, r, page *http.Request, m wire.Marks, list func(path, query string) []byte) ([]byte, *wire.Error)

// storedResponse shows GET /v1/responses/{id} as the client's POST showed
// the response (see wire/responses/stored.go).
func storedResponse(raw []byte, _, _ *http.Request, m wire.Marks, _ func(path, query string) []byte) ([]byte, *wire.Error) {
	out, _ := responses.StoredResponse(raw, m)
	return out, nil
}

// storedItems shows a list of stored items (GET
// /v1/responses/{id}/input_items, GET /v1/conversations/{id}/items)
// without the items the proxy added, reading the page's neighbours in the
// same list where the page alone does not tell, and at most the client's
// limit of them (a page read past holds more).
func storedItems(raw []byte, r, page *http.Request, m wire.Marks, list func(path, query string) []byte) ([]byte, *wire.Error) {
	q := page.URL.Query()
	order := q.Get("order")
	read := func(query string) []byte { return list(r.URL.Path, query) }
	n := responses.ItemsNeighbours(raw, order, q.Get("after") == "" && q.Get("before") == "", m, read)
	out, _ := responses.StoredItems(raw, order, clientLimit(r), n, m)
	return out, nil
}

// clientLimit is the page size the client asked for: its limit, else the
// API's default.
func clientLimit(r *http.Request) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		return n
	}
	return defaultItems
}

// defaultItems is the API's page of items when the client names no limit.
const defaultItems = 20

// storedItem shows one conversation item (GET
// /v1/conversations/{id}/items/{item_id}), its neighbours read from the
// conversation's items where needed: one the proxy added is answered as
// the API answers an item the conversation does not hold.
func storedItem(raw []byte, r, _ *http.Request, m wire.Marks, list func(path, query string) []byte) ([]byte, *wire.Error) {
	items := path.Dir(r.URL.Path) // /v1/conversations/{id}/items
	n := responses.ItemNeighbours(raw, m, func(query string) []byte { return list(items, query) })
	if responses.StoredItem(raw, n, m) {
		return raw, nil
	}
	return nil, &wire.Error{Status: http.StatusNotFound, Kind: wire.KindInvalidRequest,
		Message: fmt.Sprintf("Item with id '%s' not found.", wire.Clip(gjson.GetBytes(raw, "id").Str))}
}

// readStored serves a GET of a Responses object stored upstream: sent as
// the pass-through sends it, and a JSON answer shown through view, which
// takes out what the proxy wrote into the request the upstream stored. A
// GET asking for the event stream (?stream=true: a background response
// resumed) passes through as it is, and so does any other answer (an
// error, one larger than the proxy reads).
func (s *Server) readStored(view storedView) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodGet || r.URL.Query().Get("stream") == "true" {
			return s.passthrough(c) // HEAD (Echo routes it here): no body to show
		}
		info := requestInfo(c)
		ctx, done := s.requestContext(r.Context())
		defer done()
		w := c.Response()
		a := responsesAPI{}
		// Neighbours are read as the proxy reads stored state: the
		// client's credentials and query, within the request.
		hdr := storedObjectHeader(r)
		// The client's before (an input_items cursor) would bound the
		// neighbours to its side of it.
		cq := r.URL.Query()
		cq.Del("before")
		clientQuery := cq.Encode()
		list := func(listPath, query string) []byte {
			if query == "" {
				return nil
			}
			raw, err := s.getStored(ctx, a.target(s), hdr, clientQuery, listPath, query, exchangeAnswer)
			if err != nil {
				return nil // what the neighbours would decide is shown
			}
			return raw
		}
		var resp *http.Response
		var out []byte
		var werr *wire.Error
		// A page that held only the proxy's items would come out empty with
		// has_more true, and the SDKs stop paging at an empty page: the next
		// pages are read (after the upstream's last_id, in pages of the
		// API's largest size, cut to the client's limit when shown) until
		// one shows an item, a bounded number of times.
		for page, req := 0, r; ; page++ {
			var elapsed time.Duration
			var err error
			resp, elapsed, err = s.send(ctx, a.target(s), req, http.NoBody, 0, true, exchangeAnswer)
			s.metrics.observeUpstream(info, elapsed)
			if err != nil {
				s.fail(w, a, info, classify(ctx, err))
				return nil
			}
			info.answered(resp)
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != http.StatusOK || mt != "application/json" {
				s.relayResponse(ctx, w, info, resp)
				return nil
			}
			raw, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
			if err != nil {
				resp.Body.Close()
				s.fail(w, a, info, classify(ctx, &answerReadError{err}))
				return nil
			}
			if len(raw) > maxUpstreamBody {
				resp.Body = struct {
					io.Reader
					io.Closer
				}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
				s.relayResponse(ctx, w, info, resp)
				return nil
			}
			resp.Body.Close()
			out, werr = view(raw, r, req, s.marks, list)
			after := gjson.GetBytes(raw, "last_id").Str
			if werr != nil || page == maxHiddenPages || after == "" || !emptyWithMore(out) {
				break
			}
			req = r.Clone(ctx)
			q := req.URL.Query()
			q.Set("after", after)
			q.Set("limit", strconv.Itoa(readPastItems))
			req.URL.RawQuery = q.Encode()
		}
		h := w.Header()
		copyResponseHeader(h, resp.Header, false)
		h.Del("Content-Encoding") // the Transport decoded it
		if werr != nil {
			info.status = werr.Status
			writeError(w, a, werr)
			return nil
		}
		h.Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		info.status = http.StatusOK
		_, _ = w.Write(out)
		return nil
	}
}

// maxHiddenPages bounds the pages read past ones that held only the
// proxy's items, readPastItems items each (the API's largest page): a
// run of the proxy's items is a few per hidden round, so a page shows
// an item long before that.
const (
	maxHiddenPages = 8
	readPastItems  = 100
)

// emptyWithMore reports a list page that shows nothing but says more follow.
func emptyWithMore(page []byte) bool {
	return gjson.GetBytes(page, "object").Str == "list" && gjson.GetBytes(page, "has_more").Bool() &&
		gjson.GetBytes(page, "data.#").Int() == 0
}
