package skills

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func TestPackKeepsText(t *testing.T) {
	long := strings.Repeat("Run the linter, then fix what it reports. ", 100)
	cases := []struct {
		name       string
		skill      *Skill
		wantPacked bool
	}{
		{"parsed", parse("a/SKILL.md", "---\nname: a\ndescription: d\n---\n"+long, "", 0), true},
		{"parsed, empty body", parse("b/SKILL.md", "---\nname: b\ndescription: "+long+"\n---\n", "", 0), true},
		{"short", parse("c/SKILL.md", "---\nname: c\ndescription: d\n---\nshort\n", "", 0), false},
		{"in memory, body only", (&Skill{ID: "m"}).SetText("", long), false},
		{"body not the end of content", (&Skill{ID: "n"}).SetText(long, "other"), false},
		{"no text", &Skill{ID: "z"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.skill
			content, body, env := s.Content(), s.Body(), Envelope(s)
			plain := (&Skill{}).SetText(content, body)
			snap := newSnapshot(nil, []*Skill{s}, nil)
			saved := snap.Pack(context.Background())
			if packed := s.text.Load() != nil && s.text.Load().packed != nil; packed != tc.wantPacked {
				t.Fatalf("packed = %v, want %v", packed, tc.wantPacked)
			}
			if (saved > 0) != tc.wantPacked {
				t.Errorf("saved %d bytes", saved)
			}
			if s.Content() != content || s.Body() != body || Envelope(s) != env {
				t.Errorf("text changed by packing: content %q, body %q", s.Content(), s.Body())
			}
			if !SameContent(s, plain) || !SameBody(s, plain) {
				t.Error("a packed skill differs from its plain text")
			}
			if snap.Pack(context.Background()) != 0 {
				t.Error("packing twice saved more")
			}
		})
	}
}

// TestPackFrom: a snapshot packed after an edit takes the previous
// snapshot's packed forms of the texts that did not change, and packs the
// rest itself; readers see the same text either way.
func TestPackFrom(t *testing.T) {
	long := strings.Repeat("Run the linter, then fix what it reports. ", 100)
	mk := func(id, body string) *Skill {
		s := parse(id+"/SKILL.md", "---\nname: "+id+"\ndescription: d\n---\n"+body, "", 0)
		s.ID = id
		return s
	}
	ctx := context.Background()
	old := newSnapshot(nil, []*Skill{mk("a", long), mk("b", long), mk("c", long+"old")}, nil)
	old.Pack(ctx)
	// The next load: a and b as they were, c edited, d new, e (same text
	// as a, another id) new; the old snapshot has no e to take from.
	next := newSnapshot(nil, []*Skill{mk("a", long), mk("b", long), mk("c", long+"new"), mk("d", long+"d"), mk("e", long)}, nil)
	want := map[string]string{}
	for _, s := range next.Skills() {
		want[s.ID] = s.Content()
	}
	if next.PackFrom(ctx, old) == 0 {
		t.Fatal("nothing saved")
	}
	for _, s := range next.Skills() {
		o, _ := old.Get(s.ID)
		shared := o != nil && s.text.Load() == o.text.Load()
		if wantShared := s.ID == "a" || s.ID == "b"; shared != wantShared {
			t.Errorf("%s: shares the old packed form %v, want %v", s.ID, shared, wantShared)
		}
		if !s.Packed() {
			t.Errorf("%s: not packed", s.ID)
		}
		if s.Content() != want[s.ID] {
			t.Errorf("%s: content changed by packing", s.ID)
		}
	}
	if next.PackFrom(ctx, old) != 0 {
		t.Error("packing twice saved more")
	}
}

func TestSameText(t *testing.T) {
	a := (&Skill{}).SetText("---\nx\n---\nbody", "body")
	for _, tc := range []struct {
		b                 *Skill
		sameContent, same bool
	}{
		{(&Skill{}).SetText("---\nx\n---\nbody", "body"), true, true},
		{(&Skill{}).SetText("---\ny\n---\nbody", "body"), false, true},
		{(&Skill{}).SetText("---\nx\n---\nbodY", "bodY"), false, false},
		{(&Skill{}).SetText("", "body"), false, true},
		{&Skill{}, false, false},
	} {
		if got := SameContent(a, tc.b); got != tc.sameContent {
			t.Errorf("SameContent(%q) = %v", tc.b.Content(), got)
		}
		if got := SameBody(a, tc.b); got != tc.same {
			t.Errorf("SameBody(%q) = %v", tc.b.Body(), got)
		}
	}
	if !SameBody(&Skill{}, (&Skill{}).SetText("", "")) {
		t.Error("no text and empty text differ")
	}
}

// TestPackWhileReading packs a library while others read it (run with
// -race): readers see the same text throughout.
func TestPackWhileReading(t *testing.T) {
	var list []*Skill
	for i := range 64 {
		body := strings.Repeat("Step "+strings.Repeat("x", i)+" of the workflow. ", 40)
		list = append(list, parse("s/SKILL.md", "---\nname: s\ndescription: d\n---\n"+body, "", 0))
		list[i].ID = strings.Repeat("i", i+1)
	}
	snap := newSnapshot(nil, list, nil)
	want := make([]string, len(list))
	for i, s := range list {
		want[i] = s.Content()
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				for i, s := range snap.Skills() {
					if c := s.Content(); c != want[i] || !strings.HasSuffix(c, s.Body()) {
						t.Errorf("skill %d read differently while packing", i)
						return
					}
				}
			}
		})
	}
	snap.Pack(context.Background())
	wg.Wait()
}

func BenchmarkUnpack(b *testing.B) {
	s := parse("a/SKILL.md", "---\nname: a\ndescription: d\n---\n"+strings.Repeat("Run the linter, then fix what it reports; note each change. ", 200), "", 0)
	newSnapshot(nil, []*Skill{s}, nil).Pack(context.Background())
	b.SetBytes(int64(len(s.Content())))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Content()
	}
}
