//go:build !unix

package bench

import "time"

// processCPU is not measured here: reports show 0.
func processCPU() time.Duration { return 0 }
