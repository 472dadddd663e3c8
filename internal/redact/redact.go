// Package redact hides credentials in URLs shown in logs, errors and
// answers: a password in the userinfo, and the values of query parameters
// whose names say they hold one (an embeddings URL's ?key=, Azure's
// ?api-key=).
package redact

import (
	"net/url"
	"strings"
)

// URL hides a password in a URL for the log.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		// Shown anyway (in an error, --print-config): credentials and
		// credential-named query values are hidden all the same.
		s = Userinfo(s)
		if base, query, ok := strings.Cut(s, "?"); ok {
			s = base + "?" + Query(query)
		}
		return s
	}
	// A query goes with every upstream request (upstream.url's
	// ?api-version=...), so a key may ride in it too.
	u.RawQuery = Query(u.RawQuery)
	return u.Redacted()
}

// HasCredential reports whether URL s carries a credential that URL would
// hide: a password in the userinfo, or a credential-named query value.
func HasCredential(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		_, query, _ := strings.Cut(s, "?")
		return Userinfo(s) != s || Query(query) != query
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return Query(u.RawQuery) != u.RawQuery
}

// Query replaces the values of credential-named parameters of a raw
// query with xxxxx.
func Query(raw string) string {
	if raw == "" {
		return raw
	}
	var parts []string
	for kv := range strings.SplitSeq(raw, "&") {
		if k, _, ok := strings.Cut(kv, "="); ok && SecretKey(k) {
			kv = k + "=xxxxx"
		}
		parts = append(parts, kv)
	}
	return strings.Join(parts, "&")
}

// SecretKey reports whether a query parameter's name says it holds a
// credential (key, api-key, token, sig, secret, password, credential...),
// or is code, an Azure Functions URL's key.
func SecretKey(k string) bool {
	k = strings.ToLower(k)
	if k == "code" {
		return true
	}
	for _, w := range []string{"key", "token", "secret", "sig", "password", "auth", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Userinfo is a URL as written with whatever stands before the "@"
// that ends its authority shown as xxxxx: it may be a password or a token.
// A URL that does not parse (a "#", "%", "/" or "?" in a password) is
// hidden up to its last "@": too much rather than a password.
func Userinfo(s string) string {
	rest, scheme := s, ""
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, rest = s[:i+3], s[i+3:]
	}
	at := -1
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return s
		}
		at = strings.Index(rest, "@"+u.Host)
	}
	if at < 0 {
		at = strings.LastIndex(rest, "@")
	}
	if at < 0 {
		return s
	}
	return scheme + "xxxxx" + rest[at:]
}

// Stripped is u without userinfo, query and fragment: where a URL is
// shown as the address it names (logs, span attributes), and any of those
// may hold a credential.
func Stripped(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}
