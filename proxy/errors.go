package proxy

import (
	"encoding/json"
	"net/http"
)

// Error types used in OpenAI-shaped error bodies.
const (
	errTypeInvalidRequest = "invalid_request_error"
	errTypeUpstream       = "upstream_error"
	errTypeServer         = "server_error"
)

// apiError is the OpenAI error envelope {"error":{"message","type","code"}}.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func newAPIError(typ, code, msg string) apiError {
	e := apiError{Error: apiErrorBody{Message: msg, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	return e
}

func (e apiError) marshal() []byte {
	b, _ := json.Marshal(e) // cannot fail: strings only
	return b
}

// writeError writes an OpenAI-shaped error with the given status.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeAPIError(w, status, newAPIError(typ, code, msg))
}

func writeAPIError(w http.ResponseWriter, status int, e apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(e.marshal())
}

// statusClientClosed is logged (never sent) when the client went away, as nginx does.
const statusClientClosed = 499
