//go:build unix && !linux

package sandbox

import (
	"errors"
	"log/slog"
)

// newRunner: without Linux there is no Landlock and no child subreaper, so
// scripts run in their own process group, unconfined.
func newRunner(c Confinement, log *slog.Logger) (runner, error) {
	if c == ConfineLandlock {
		return nil, errors.New("sandbox: confinement landlock needs Linux")
	}
	if c == ConfineAuto {
		log.Warn("sandbox: no write confinement on this platform; scripts can write wherever file permissions allow")
	}
	return directRunner{}, nil
}
