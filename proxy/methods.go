package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// endpoint is one method the proxy serves on one of its own paths.
type endpoint struct {
	method  string
	handler echo.HandlerFunc
}

// routedMethods are the methods Echo's Any registers, i.e. the ones the
// /v1/* pass-through would take.
var routedMethods = []string{
	http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead,
	http.MethodOptions, http.MethodPatch, http.MethodPost, echo.PROPFIND,
	http.MethodPut, http.MethodTrace, echo.REPORT,
}

// own registers a path the proxy answers itself: the given methods (a GET
// also answers HEAD), OPTIONS with the Allow header, and 405 for the rest.
// Left unregistered, another method on a /v1/skills path would fall through
// to the /v1/* pass-through and reach the upstream.
func own(e *echo.Echo, path string, eps ...endpoint) {
	served := map[string]echo.HandlerFunc{}
	for _, ep := range eps {
		served[ep.method] = ep.handler
	}
	if h := served[http.MethodGet]; h != nil && served[http.MethodHead] == nil {
		served[http.MethodHead] = h
	}
	var allow []string
	for _, m := range routedMethods {
		if served[m] != nil && m != http.MethodOptions {
			allow = append(allow, m)
		}
	}
	allowed := strings.Join(append(allow, http.MethodOptions), ", ")
	for _, m := range routedMethods {
		h := served[m]
		switch {
		case h != nil:
		case m == http.MethodOptions:
			h = func(c echo.Context) error {
				c.Response().Header().Set(echo.HeaderAllow, allowed)
				return c.NoContent(http.StatusNoContent)
			}
		default:
			h = methodNotAllowed(allowed)
		}
		e.Add(m, path, h)
	}
	// Methods outside routedMethods (Echo's router knows no other).
	e.RouteNotFound(path, methodNotAllowed(allowed))
}

func methodNotAllowed(allowed string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderAllow, allowed)
		return echo.ErrMethodNotAllowed
	}
}

// methodNotAllowedMessage says which method is wrong and which would do
// (Allow is set by methodNotAllowed and by Echo's own 405 handler).
func methodNotAllowedMessage(c echo.Context) string {
	r := c.Request()
	msg := fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)
	if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
		msg += " (allowed: " + allow + ")"
	}
	return msg
}
