//go:build linux

package sandbox

import (
	"slices"
	"testing"
)

func TestSupervisorArgsRoundTrip(t *testing.T) {
	argv := []string{"/bin/sh", "-c", "--", "-w"}
	args := supervisorArgs(7, []string{"/o", "/h"}, argv)
	if args[0] != supervisorArg0 {
		t.Fatalf("argv0 %q", args[0])
	}
	abi, w, got, err := parseSupervisorArgs(args[1:])
	if err != nil || abi != 7 || !slices.Equal(w, []string{"/o", "/h"}) || !slices.Equal(got, argv) {
		t.Fatalf("%d %v %v %v", abi, w, got, err)
	}
	for _, bad := range [][]string{nil, {"x"}, {"1", "-w"}, {"1", "--"}, {"1", "-x"}, {"1"}} {
		if _, _, _, err := parseSupervisorArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParentOf(t *testing.T) {
	tests := map[string]int{
		"12 (bash) S 7 12 12 0 -1":          7,
		"13 (a) (b) ) R 99 13 13 0 -1":      99,
		"14 (with space) Z 1 0 0":           1,
		"garbage":                           -1,
		"15 (x)":                            -1,
		"16 (x) S notanumber 1 1 0 -1 4194": -1,
	}
	for line, want := range tests {
		if got := parentOf([]byte(line)); got != want {
			t.Errorf("parentOf(%q) = %d, want %d", line, got, want)
		}
	}
}

func TestLandlockProbe(t *testing.T) {
	abi := landlockABI()
	t.Logf("Landlock ABI %d", abi)
	if abi < 0 {
		t.Fatal("negative ABI")
	}
	if abi == 0 {
		if _, err := New(Config{Enabled: true, Confinement: ConfineLandlock, OutputRoot: t.TempDir()}, nil); err == nil {
			t.Error("landlock required without kernel support, but New succeeded")
		}
	}
}
