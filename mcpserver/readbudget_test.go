package mcpserver

import (
	"context"
	"errors"
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
	uri, size := indexesResource(t, f)
	f.srv.reads = budgetsOf(size, size) // room for one such read
	body := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"` + uri + `"}}`
	req := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		return r
	}
	r1 := req()
	release, err := f.srv.admitRead(context.Background(), peek(r1))
	if err != nil || release == nil {
		t.Fatalf("first read: release %v, err %v", release != nil, err)
	}
	if b, _ := io.ReadAll(r1.Body); string(b) != body {
		t.Errorf("the body passed on is %q, want it as sent", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.srv.admitRead(ctx, peek(req())); err == nil {
		t.Error("a second read was admitted while the first's answer was still held")
	}
	// Other requests never wait.
	other, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`))
	if rel, err := f.srv.admitRead(ctx, peek(other)); rel != nil || err != nil {
		t.Errorf("tools/list: release %v, err %v; want neither", rel != nil, err)
	}
	// A batch of reads counts too.
	batch, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`[`+body+`]`))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := f.srv.admitRead(ctx2, peek(batch)); err == nil {
		t.Error("a batch holding a read was admitted while the first's answer was still held")
	}
	release()
	rel, err := f.srv.admitRead(context.Background(), peek(req()))
	if err != nil || rel == nil {
		t.Fatalf("after the first answer: release %v, err %v", rel != nil, err)
	}
	rel()
}

// Small files have their own budget: a read of one never queues behind a
// large read waiting for room.
func TestAdmitReadSmallNotBehindLarge(t *testing.T) {
	f := newFixture(t, false)
	var uri string
	for u, fr := range f.srv.current().files {
		if strings.HasSuffix(u, "/indexes.md") && fr.res.Size <= smallRead {
			uri = u
		}
	}
	if uri == "" {
		t.Fatal("no small indexes.md resource in the fixture")
	}
	f.srv.reads.large = semaphore.NewWeighted(1)
	if err := f.srv.reads.large.Acquire(context.Background(), 1); err != nil { // the large budget is all taken
		t.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"`+uri+`"}}`))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rel, err := f.srv.admitRead(ctx, peek(r))
	if err != nil || rel == nil {
		t.Fatalf("a small read waited on the large budget: %v", err)
	}
	rel()
}

// A batch of reads is answered at once, so its files are held together: a
// batch asking for more than the budget is refused, not charged the budget
// (forty reads of a 5.6 MB file took 400 MB).
func TestAdmitReadBatchOverBudget(t *testing.T) {
	f := newFixture(t, false)
	uri, size := indexesResource(t, f)
	f.srv.reads = budgetsOf(size, size)
	read := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"` + uri + `"}}`
	r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`[`+read+`,`+strings.Replace(read, `"id":7`, `"id":8`, 1)+`]`))
	if _, err := f.srv.admitRead(context.Background(), peek(r)); !errors.Is(err, errReadBatch) {
		t.Fatalf("a batch over the budget: err %v, want errReadBatch", err)
	}
	// Padded past a megabyte, as a body the SDK still takes: the same.
	r, _ = http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`[`+read+`,`+strings.Replace(read, `"id":7`, `"id":8`, 1)+`]`+strings.Repeat(" ", 2<<20)))
	if _, err := f.srv.admitRead(context.Background(), peek(r)); !errors.Is(err, errReadBatch) {
		t.Fatalf("a padded batch over the budget: err %v, want errReadBatch", err)
	}
	// One read of a file larger than the budget still gets it all.
	f.srv.reads = budgetsOf(size-1, size-1)
	r, _ = http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(read))
	rel, err := f.srv.admitRead(context.Background(), peek(r))
	if err != nil || rel == nil {
		t.Fatalf("one read larger than the budget: release %v, err %v", rel != nil, err)
	}
	rel()
}

// indexesResource is the fixture's indexes.md resource: its URI and size.
func indexesResource(t *testing.T, f *fixture) (string, int64) {
	t.Helper()
	for u, fr := range f.srv.current().files {
		if strings.HasSuffix(u, "/indexes.md") && fr.res.Size > 0 {
			return u, fr.res.Size
		}
	}
	t.Fatal("no indexes.md resource in the fixture")
	return "", 0
}
