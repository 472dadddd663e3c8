//go:build !unix

package bench

import "time"

// ProcessCPU is not measured here: reports show 0.
func ProcessCPU() time.Duration { return 0 }
