//go:build !unix

package skills

import "time"

func processCPU() time.Duration { return 0 }
