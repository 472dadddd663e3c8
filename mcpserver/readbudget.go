package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"golang.org/x/sync/semaphore"
)

// A resources/read answer holds its file several times over until the
// client has read it (the bytes, the text or base64 copy, the JSON-RPC
// encoding): ~32 MB for a 15 MiB file, for as long as a slow client takes
// (the write timeout). Sixty such reads at once held 2 GB. The bytes of
// files being read and answered over HTTP are therefore bounded: a read
// waits until its files fit, and its share is given back once the answer
// is written, not when the handler returns. Small files have a budget of
// their own, so that they never queue behind a large one.
const (
	readBudget      = 64 << 20
	smallReadBudget = 16 << 20
	smallRead       = 1 << 20 // a read of at most this much uses smallReadBudget
)

// peekLimit is the largest body the SDK takes (a larger one gets 413):
// every request it answers is peeked, so none reads files unaccounted (a
// batch padded past a smaller limit did).
const peekLimit = mcp.DefaultMaxRequestBodyBytes

// readBudgets are the two budgets of admitRead and their sizes.
type readBudgets struct {
	small, large           *semaphore.Weighted
	smallBytes, largeBytes int64
}

func newReadBudgets() readBudgets { return budgetsOf(smallReadBudget, readBudget) }

func budgetsOf(small, large int64) readBudgets {
	return readBudgets{small: semaphore.NewWeighted(small), large: semaphore.NewWeighted(large), smallBytes: small, largeBytes: large}
}

// peek returns a POST's body, up to peekLimit, and puts it back as it
// came; nil for a larger one (which the SDK refuses).
func peek(r *http.Request) []byte {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, peekLimit+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > peekLimit {
		return nil
	}
	return head
}

// admitRead holds a request (its body head, peeked) until the files the
// resources/read requests in it (one, or a batch's) ask for fit in their
// budget, and returns what gives the share back (nil when they ask for
// none).
func (s *Server) admitRead(ctx context.Context, head []byte) (release func(), err error) {
	if head == nil {
		return nil, nil
	}
	var n int64
	reads := 0
	eachMessage(head, func(m gjson.Result) {
		if m.Get("method").Str != "resources/read" {
			return
		}
		if f, ok := s.current().files[m.Get("params.uri").Str]; ok && f.res.Size > 0 {
			n += f.res.Size
			reads++
		}
	})
	if n == 0 {
		return nil, nil
	}
	sem, limit := s.reads.large, s.reads.largeBytes
	if n <= smallRead {
		sem, limit = s.reads.small, s.reads.smallBytes
	}
	if n > limit {
		if reads > 1 {
			// Served at once, a batch's answers are held together: more
			// than the whole budget would be held past it.
			return nil, errReadBatch
		}
		n = limit // one file larger than the budget: it has it all
	}
	if err := sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { sem.Release(n) }, nil
}

// errReadBatch refuses a batch whose reads ask for more than the budget.
var errReadBatch = errors.New("this batch reads more file bytes than the server reads at once: read them in smaller batches or one at a time")

// readCloser reads from the peeked head and the rest, and closes the
// original body.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }
