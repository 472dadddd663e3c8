package redact

import (
	"net/url"
	"testing"
)

// URL, for logs, doctor and --print-config: a password, and a query
// parameter whose name says it holds a credential (the base URL's query
// goes with every request), are shown as xxxxx; the rest as written.
func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:pw@h/v1":                             "https://u:xxxxx@h/v1",
		"https://h/v1?api-version=2024-10-21":           "https://h/v1?api-version=2024-10-21",
		"https://h/v1?key=AIza123&api-version=1":        "https://h/v1?key=xxxxx&api-version=1",
		"https://h/v1?sig=abc&X-Api-Key=k&token=t":      "https://h/v1?sig=xxxxx&X-Api-Key=xxxxx&token=xxxxx",
		"http://127.0.0.1:11434/v1":                     "http://127.0.0.1:11434/v1",
		"https://h/api?code=F1x&credential=c&zipcode=1": "https://h/api?code=xxxxx&credential=xxxxx&zipcode=1",
		// Not parsable (a "%" that is no escape): hidden all the same.
		"https://u:p%zz@h/v1":             "https://xxxxx@h/v1",
		"https://h/v1?key=a%zz&x=1":       "https://h/v1?key=xxxxx&x=1",
		"https://u:p#w@h/v1?token=t":      "https://xxxxx@h/v1?token=xxxxx",
		"https://user:pa/ss@h.example/v1": "https://xxxxx@h.example/v1",
		"https://user:p?ss@h.example/v1":  "https://xxxxx@h.example/v1",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUserinfo(t *testing.T) {
	if got := Userinfo("http://127.0.0.1:11434/v1?a=b@c"); got != "http://127.0.0.1:11434/v1?a=b@c" {
		t.Errorf("a URL without credentials changed: %s", got)
	}
	if got := Userinfo("https://team:pa#ss@llm.internal/v1"); got != "https://xxxxx@llm.internal/v1" {
		t.Errorf("a password with # shown: %s", got)
	}
}

func TestStripped(t *testing.T) {
	u, _ := url.Parse("https://u:pw@h/v1/embeddings?key=k#f")
	if got := Stripped(u); got != "https://h/v1/embeddings" {
		t.Errorf("Stripped = %s", got)
	}
}

func TestHasCredential(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"https://llm.example/v1", false},
		{"https://llm.example/v1?api-version=2024-10-21", false},
		{"https://u:p@llm.example/v1", true},
		{"https://user@llm.example/v1", false},
		{"https://llm.example/v1?api-key=abcdefgh", true},
		{"https://llm.example/v1?code=abc", true},
		{"https://u:p@llm.example/%zz", true}, // does not parse
		{"", false},
	} {
		if got := HasCredential(tt.url); got != tt.want {
			t.Errorf("HasCredential(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}
