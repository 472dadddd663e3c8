//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLimitsApplied: a script runs with the configured limits as its soft
// and hard limits, without core dumps, and as the OOM killer's first
// choice; with no limits set, only the last two.
func TestLimitsApplied(t *testing.T) {
	sk := scriptSkill(t, "limits", "limits.sh", "#!/bin/sh\ncat /proc/self/limits /proc/self/oom_score_adj\n")
	for _, tc := range []struct {
		name   string
		limits Limits
		want   []string
	}{
		{"set", Limits{Memory: 256 << 20, FileSize: 1 << 20, Processes: 5000}, []string{
			"Max data size 268435456 268435456 bytes", "Max file size 1048576 1048576 bytes",
			"Max processes 5000 5000 processes", "Max core file size 0 0 bytes"}},
		// Unset limits are the ones the proxy has (unlimited on most
		// machines), whatever they are.
		{"none", Limits{}, append(ownLimits(t, "Max data size", "Max file size"), "Max core file size 0 0 bytes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newTestProvider(t, func(c *Config) { c.Limits = tc.limits })
			if _, ok := p.runner.(supervisorRunner); !ok {
				t.Skipf("scripts run with %T here", p.runner)
			}
			res := execute(t, p, sk, "c-"+tc.name, "scripts/limits.sh")
			got := strings.Join(strings.Fields(res.Stdout), " ")
			for _, w := range append(tc.want, "1000") {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in:\n%s", w, res.Stdout)
				}
			}
		})
	}
}

// ownLimits returns the lines of this process's /proc/self/limits that
// start with names, their fields joined by single spaces.
func ownLimits(t *testing.T, names ...string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Skip(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, n) {
				out = append(out, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("/proc/self/limits lacks some of %q:\n%s", names, b)
	}
	return out
}

// TestMemoryLimit: an allocation past exec.memory_limit fails in the
// script, which goes on or ends as it handles that; the same allocation
// succeeds without the limit.
func TestMemoryLimit(t *testing.T) {
	requireProgram(t, "python3")
	sk := scriptSkill(t, "alloc", "alloc.py", "#!/usr/bin/env python3\n"+
		"try:\n    b = bytearray(300 << 20)\n    print('allocated', len(b) >> 20)\nexcept MemoryError:\n    print('MemoryError')\n")
	for _, tc := range []struct {
		limit int64
		want  string
	}{{128 << 20, "MemoryError"}, {0, "allocated 300"}} {
		p, _ := newTestProvider(t, func(c *Config) { c.Limits.Memory = tc.limit })
		if _, ok := p.runner.(supervisorRunner); !ok {
			t.Skipf("scripts run with %T here", p.runner)
		}
		res := execute(t, p, sk, "c-alloc", "scripts/alloc.py")
		if strings.TrimSpace(res.Stdout) != tc.want || res.ExitCode != 0 {
			t.Errorf("limit %d: want %q, got %+v", tc.limit, tc.want, res)
		}
	}
}

// TestFileSizeLimit: a write past exec.file_size_limit fails, the file
// cut at the limit: a program that keeps SIGXFSZ's default is stopped by it
// and the result says why; Python, which ignores the signal, gets EFBIG.
func TestFileSizeLimit(t *testing.T) {
	if got := syscall.SIGXFSZ.String(); got != signalFileSize {
		t.Fatalf("SIGXFSZ is named %q, results compare %q", got, signalFileSize)
	}
	p, _ := newTestProvider(t, func(c *Config) { c.Limits.FileSize = 1 << 20 })
	if _, ok := p.runner.(supervisorRunner); !ok {
		t.Skipf("scripts run with %T here", p.runner)
	}
	cut := func(res execResult, name string) {
		t.Helper()
		if info, err := os.Stat(filepath.Join(res.OutputDir, name)); err != nil || info.Size() != 1<<20 {
			t.Errorf("%s: %v %v; result %+v", name, info, err, res)
		}
	}
	sk := scriptSkill(t, "big", "big.sh", "#!/bin/sh\nexec head -c 2097152 /dev/zero > big.bin\n")
	res := execute(t, p, sk, "c-big", "scripts/big.sh")
	cut(res, "big.bin")
	if res.OK || res.Signal != signalFileSize || !strings.Contains(res.Note, "1048576-byte file size limit") {
		t.Errorf("want a stop by SIGXFSZ with a note, got %+v", res)
	}
	requireProgram(t, "python3")
	sk = scriptSkill(t, "big2", "big.py", "#!/usr/bin/env python3\nopen('big2.bin', 'wb').write(bytes(2 << 20))\n")
	res = execute(t, p, sk, "c-big", "scripts/big.py")
	cut(res, "big2.bin")
	if res.OK || !strings.Contains(res.Stderr, "File too large") || res.Note != "" {
		t.Errorf("want EFBIG, got %+v", res)
	}
}

// TestLimitsValidated: limits that would keep every interpreter from
// starting, or that are negative, are refused with the setting named.
func TestLimitsValidated(t *testing.T) {
	for _, l := range []Limits{{Memory: 1 << 20}, {Memory: 48 << 20}, {Memory: -1}, {FileSize: -1}, {Processes: -1}} {
		if _, err := (Config{Enabled: true, Limits: l}).Effective(); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	if _, err := (Config{Enabled: true, Limits: Limits{Memory: 64 << 20, FileSize: 1, Processes: 1}}).Effective(); err != nil {
		t.Error(err)
	}
}
