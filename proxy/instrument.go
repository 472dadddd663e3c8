package proxy

import "net/http"

// Hooks for instrumentation wired outside the proxy (cmd/router wraps the
// server and its transport for OpenTelemetry); this file only exports what
// already exists.

// DefaultTransport is NewTransport with the default connect timeout.
func DefaultTransport() http.RoundTripper { return NewTransport(0) }

// RouteLabel maps a request path to the bounded-cardinality label the
// metrics use (/v1/models/gpt-4o → /v1/models), fit for span names. It takes
// the path as the client sent it, so its slashes are merged first, as the
// proxy routes it (see mergeSlashes).
func RouteLabel(path string) string { return metricPath(collapseSlashes(path)) }
