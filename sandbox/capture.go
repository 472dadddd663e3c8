package sandbox

import (
	"bytes"
	"io"
	"sync"
)

// capture keeps stdout and stderr of one execution under one shared byte
// budget. Past the budget it drops output (never blocking the writer, so the
// child cannot stall on a full pipe) and closes over once, which tells the
// runner to stop the process.
type capture struct {
	mu        sync.Mutex
	limit     int
	used      int
	stdout    bytes.Buffer
	stderr    bytes.Buffer
	truncated bool
	cut       string // the stream whose write hit the cap
	over      chan struct{}
}

func newCapture(limit int) *capture {
	return &capture{limit: limit, over: make(chan struct{})}
}

type captureStream struct {
	c    *capture
	name string
	buf  *bytes.Buffer
}

func (c *capture) streams() (stdout, stderr io.Writer) {
	return captureStream{c, "stdout", &c.stdout}, captureStream{c, "stderr", &c.stderr}
}

func (s captureStream) Write(p []byte) (int, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - c.used
	if len(p) <= room {
		s.buf.Write(p)
		c.used += len(p)
		return len(p), nil
	}
	if room > 0 {
		s.buf.Write(p[:room])
		c.used += room
	}
	if !c.truncated {
		c.truncated, c.cut = true, s.name
		close(c.over)
	}
	return len(p), nil
}

// result returns copies of the captured streams, cut at rune boundaries,
// and which stream reached the cap first.
func (c *capture) result() (stdout, stderr []byte, truncated bool, cut string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stdout = cutRunes(bytes.Clone(c.stdout.Bytes()))
	stderr = cutRunes(bytes.Clone(c.stderr.Bytes()))
	return stdout, stderr, c.truncated, c.cut
}
