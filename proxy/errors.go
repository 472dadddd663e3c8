package proxy

import (
	"net/http"
	"strings"

	"github.com/skillrouter/skillrouter/wire"
)

// writeError writes an error the proxy gives in a's envelope.
func writeError(w http.ResponseWriter, a api, e *wire.Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(e.Status)
	_, _ = w.Write(a.errorJSON(e))
}

// apiForPath is the API whose error envelope a path's errors use: Anthropic's
// under /v1/messages, OpenAI's everywhere else (the proxy's own endpoints
// included).
func apiForPath(p string) api {
	if p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") {
		return messagesAPI{}
	}
	return chatAPI{}
}

// statusClientClosed is logged (never sent) when the client went away, as nginx does.
const statusClientClosed = 499
