//go:build !unix

package sandbox

import (
	"errors"
	"log/slog"
)

// newRunner: process groups and signals are needed to contain scripts.
func newRunner(Confinement, *slog.Logger) (runner, error) {
	return nil, errors.New("sandbox: script execution needs a Unix system")
}
