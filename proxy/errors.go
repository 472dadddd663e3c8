package proxy

import (
	"net/http"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
)

// writeError writes an error the proxy gives in a's envelope; a 499 (the
// client went away) is only logged: there is nobody to send it to.
func writeError(w http.ResponseWriter, a api, e *wire.Error) {
	if e.Status == statusClientClosed {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	if e.Code == codeServerBusy {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(a.errorJSON(e))
}

// apiFor is the API a request belongs to: Anthropic's for /v1/messages...
// and for any request carrying anthropic-version (the Anthropic SDKs send
// it on every call: models, files, batches), OpenAI's otherwise (the
// proxy's own endpoints included). It picks the error envelope, which key
// header is the client's, and where a passed-through request goes.
func apiFor(r *http.Request) api {
	if anthropicRequest(r) {
		return messagesAPI{}
	}
	return chatAPI{}
}

func anthropicRequest(r *http.Request) bool {
	p := r.URL.Path
	return p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") || r.Header.Get("Anthropic-Version") != ""
}

// statusClientClosed is logged (never sent) when the client went away, as nginx does.
const statusClientClosed = 499
