package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A signal delivered twice at once (timeout(1) signals the process and its
// group) is one request to stop gracefully; one sent later forces the exit.
func TestNextSignal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		delays []time.Duration // after the first signal, when each next one arrives
		want   int             // index of the one that forces the exit
	}{
		{"a later second signal", []time.Duration{300 * time.Millisecond}, 0},
		{"a duplicate, then a later one", []time.Duration{0, 300 * time.Millisecond}, 1},
		{"two duplicates, then a later one", []time.Duration{0, time.Millisecond, 300 * time.Millisecond}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sig := make(chan os.Signal, len(tt.delays))
			first := time.Now()
			go func() {
				for i, d := range tt.delays {
					time.Sleep(time.Until(first.Add(d)))
					sig <- syscall.Signal(100 + i) // tells them apart
				}
			}()
			got := nextSignal(sig, first, 200*time.Millisecond)
			if got != syscall.Signal(100+tt.want) {
				t.Errorf("forced by %v, want signal %d of %v", got, tt.want, tt.delays)
			}
		})
	}
}
