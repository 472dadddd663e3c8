package router_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillrouter/skillrouter/router"
	"github.com/skillrouter/skillrouter/skills"
)

// forkedLibrary is the ranking fixture plus a lightly edited copy of
// pdf-forms, as libraries that vendor one skill twice have.
func forkedLibrary(t *testing.T) *skills.Snapshot {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(rankingFixture)); err != nil {
		t.Fatal(err)
	}
	fork := `---
name: pdf-forms-acme
description: "Fill in, flatten and extract text from PDF forms. Use when the user has a PDF document with form fields or needs its text."
---

# PDF forms

Read form fields with pypdf, fill them, flatten the result. For text extraction use pdftotext and keep the layout.
`
	if err := os.MkdirAll(filepath.Join(dir, "pdf-forms-acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pdf-forms-acme", "SKILL.md"), []byte(fork), 0o644); err != nil {
		t.Fatal(err)
	}
	return skills.Load(context.Background(), []string{dir}, skills.Options{})
}

func TestNearDuplicateNotAutoLoadedTwice(t *testing.T) {
	opts := builtinOptions()
	opts.RelativeScore = -1 // only the duplicate rule may keep the fork out
	r := newRouter(t, forkedLibrary(t), opts)
	pair := map[string]bool{"pdf-forms": true, "pdf-forms-acme": true}
	for _, s := range []router.Strategy{router.StrategyBM25, router.StrategyEmbedding, router.StrategyHybrid} {
		d := route(r, s, "fill in the form fields of this PDF, flatten it and extract the text of the PDF form")
		n, other := 0, ""
		for _, id := range d.Selected {
			if pair[id] {
				n++
			}
		}
		for id := range pair {
			if !contains(d.Selected, id) {
				other = id
			}
		}
		if n != 1 {
			t.Errorf("%s: selected %v, want exactly one of the two forks", s, d.Selected)
			continue
		}
		if why := d.Reasons[other]; !strings.HasPrefix(why, "near-duplicate of pdf-forms") {
			t.Errorf("%s: reason for %s = %q, want near-duplicate", s, other, why)
		}
	}
	// A mentioned skill counts as selected: its fork is not auto-loaded next to it.
	d := route(r, router.StrategyHybrid, "#pdf-forms-acme fill in the form fields of this PDF and extract the text")
	if contains(d.Selected, "pdf-forms") {
		t.Errorf("fork auto-loaded next to the pinned skill: %v", d.Selected)
	}
	// Different skills about the same file type are not duplicates.
	d = route(r, router.StrategyBM25, "fill the PDF form fields and build a PDF invoice for the customer")
	if why := d.Reasons["invoice-builder"]; strings.Contains(why, "near-duplicate") {
		t.Errorf("invoice-builder called a duplicate: %q", why)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
