//go:build linux

package sandbox

import (
	"slices"
	"testing"
)

func TestSupervisorArgsRoundTrip(t *testing.T) {
	argv := []string{"/bin/sh", "-c", "--", "-w", "-l"}
	for _, limits := range []Limits{{}, {Memory: 64 << 20}, {Memory: 1 << 40, FileSize: 5, Processes: 300}} {
		args := supervisorArgs(confinementSpec{abi: 7, writable: []string{"/o", "/h"}, limits: limits, argv: argv})
		if args[0] != supervisorArg0 {
			t.Fatalf("argv0 %q", args[0])
		}
		c, err := parseSupervisorArgs(args[1:])
		if err != nil || c.abi != 7 || !slices.Equal(c.writable, []string{"/o", "/h"}) || c.limits != limits || !slices.Equal(c.argv, argv) {
			t.Fatalf("%+v: %+v %v", limits, c, err)
		}
	}
	for _, bad := range [][]string{nil, {"x"}, {"1", "-w"}, {"1", "--"}, {"1", "-x"}, {"1"}, {"1", "-l"},
		{"1", "-l", "memory", "--", "x"}, {"1", "-l", "memory=0", "--", "x"}, {"1", "-l", "memory=-5", "--", "x"}, {"1", "-l", "cpu=5", "--", "x"}} {
		if _, err := parseSupervisorArgs(bad); err == nil {
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
