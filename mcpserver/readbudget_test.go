package mcpserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// resources/read answers over HTTP share a budget of file bytes, held until
// the answer is written: sixty slow readers of a 15 MiB file held 2 GB.
func TestAdmitReadBounded(t *testing.T) {
	f := newFixture(t, false)
	var uri string
	var size int64
	for u, fr := range f.srv.current().files {
		if strings.HasSuffix(u, "/indexes.md") {
			uri, size = u, fr.res.Size
		}
	}
	if uri == "" || size <= 0 {
		t.Fatal("no indexes.md resource in the fixture")
	}
	f.srv.reads = semaphore.NewWeighted(size) // room for one such read
	body := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"` + uri + `"}}`
	req := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		return r
	}
	r1 := req()
	release, err := f.srv.admitRead(context.Background(), r1)
	if err != nil || release == nil {
		t.Fatalf("first read: release %v, err %v", release != nil, err)
	}
	if b, _ := io.ReadAll(r1.Body); string(b) != body {
		t.Errorf("the body passed on is %q, want it as sent", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.srv.admitRead(ctx, req()); err == nil {
		t.Error("a second read was admitted while the first's answer was still held")
	}
	// Other requests never wait.
	other, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`))
	if rel, err := f.srv.admitRead(ctx, other); rel != nil || err != nil {
		t.Errorf("tools/list: release %v, err %v; want neither", rel != nil, err)
	}
	release()
	rel, err := f.srv.admitRead(context.Background(), req())
	if err != nil || rel == nil {
		t.Fatalf("after the first answer: release %v, err %v", rel != nil, err)
	}
	rel()
}
