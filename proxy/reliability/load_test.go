package reliability

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A bounded load client: conns workers send requests until the duration
// is over or max requests were sent, whichever comes first.

// call is one request of a load run and how it went.
type call struct {
	kind    string // what was asked (for the fault mix)
	status  int    // 0: the request failed at the socket
	err     string
	latency time.Duration
	body    string
}

type loadResult struct {
	calls   []call
	elapsed time.Duration
}

// load runs do from conns workers for at most d and at most max requests.
func load(conns int, d time.Duration, max int, do func(ctx context.Context, worker, n int) call) *loadResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var sent atomic.Int64
	var mu sync.Mutex
	res := &loadResult{}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := int(sent.Add(1))
				if n > max {
					return
				}
				c := do(ctx, w, n)
				if ctx.Err() != nil && c.status == 0 {
					return // cut by the end of the run, not a failure
				}
				mu.Lock()
				res.calls = append(res.calls, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// percentile of the latencies of the calls that pass keep.
func (r *loadResult) percentile(p float64, keep func(call) bool) time.Duration {
	var ls []time.Duration
	for _, c := range r.calls {
		if keep == nil || keep(c) {
			ls = append(ls, c.latency)
		}
	}
	if len(ls) == 0 {
		return 0
	}
	slices.Sort(ls)
	i := int(p * float64(len(ls)-1))
	return ls[i]
}

func (r *loadResult) count(keep func(call) bool) int {
	n := 0
	for _, c := range r.calls {
		if keep(c) {
			n++
		}
	}
	return n
}

// client is the load's HTTP client: keep-alive connections, one per worker.
func newClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	tr.MaxConnsPerHost = conns
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}
