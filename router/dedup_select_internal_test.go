package router

import (
	"testing"

	"github.com/skillrouter/skillrouter/skills"
)

func TestOverlap(t *testing.T) {
	sk := func(name, desc, body string) *skills.Skill {
		return (&skills.Skill{ID: name, Name: name, Description: desc}).SetText("", body)
	}
	base := sk("csv-clean", "Clean CSV files: fix delimiters, encodings and broken quotes.", "Detect the delimiter, re-encode to UTF-8, repair quoting.")
	for _, tc := range []struct {
		name   string
		other  *skills.Skill
		lo, hi float64
	}{
		{"itself", base, 1, 1},
		{"reworded fork", sk("csv-clean", "Clean CSV files: repair delimiters, encodings and broken quotes.", "Detect the delimiter, re-encode to UTF-8, fix quoting."), dupOverlap, 1},
		{"unrelated", sk("k8s-deploy", "Deploy services to Kubernetes with Helm.", "Write a chart, roll out, roll back."), 0, 0.1},
		{"empty", sk("", "", ""), 0, 0},
	} {
		got := overlap(signatureOf(base), signatureOf(tc.other))
		if got < tc.lo || got > tc.hi {
			t.Errorf("%s: overlap %.3f, want [%.2f, %.2f]", tc.name, got, tc.lo, tc.hi)
		}
	}
}
