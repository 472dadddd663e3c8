package mcpserver

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
	"golang.org/x/sync/semaphore"
)

// A resources/read answer holds its file several times over until the
// client has read it (the bytes, the text or base64 copy, the JSON-RPC
// encoding): ~32 MB for a 15 MiB file, for as long as a slow client takes
// (the write timeout). Sixty such reads at once held 2 GB. The bytes of
// files being read and answered over HTTP are therefore bounded: a read
// waits until its file fits in readBudget, and its share is given back once
// the answer is written, not when the handler returns. Small files are
// never held up by each other.
const readBudget = 64 << 20

// peekLimit bounds the request body read to find a resources/read: MCP
// requests are small, and a larger body is passed on unread.
const peekLimit = 1 << 20

// admitRead holds r until the file a resources/read in it asks for fits in
// the budget, and returns what gives its share back (nil when it asks for
// none). The body is put back as it came.
func (s *Server) admitRead(ctx context.Context, r *http.Request) (release func(), err error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, peekLimit+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > peekLimit {
		return nil, nil // the SDK reads (and answers) it as it is
	}
	v := gjson.GetManyBytes(head, "method", "params.uri")
	if v[0].Str != "resources/read" {
		return nil, nil
	}
	f, ok := s.current().files[v[1].Str]
	if !ok || f.res.Size <= 0 {
		return nil, nil
	}
	n := min(f.res.Size, readBudget)
	if err := s.reads.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { s.reads.Release(n) }, nil
}

// readCloser reads from the peeked head and the rest, and closes the
// original body.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

func newReadBudget() *semaphore.Weighted { return semaphore.NewWeighted(readBudget) }
