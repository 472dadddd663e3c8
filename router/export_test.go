package router

import "time"

// Test hooks for package router_test.

// SetHybridBM25Weight changes bm25's share of the hybrid score (for
// measuring alternatives in the quality test) and returns a func restoring it.
func SetHybridBM25Weight(w float64) func() {
	old := hybridBM25Weight
	hybridBM25Weight = w
	return func() { hybridBM25Weight = old }
}

// SetHybridRRF switches hybrid ranking to reciprocal rank fusion.
func SetHybridRRF(on bool) func() {
	old := hybridRRF
	hybridRRF = on
	return func() { hybridRRF = old }
}

// SetVectorRetryEvery shortens the background retry interval.
func SetVectorRetryEvery(d time.Duration) func() {
	old := vectorRetryEvery
	vectorRetryEvery = d
	return func() { vectorRetryEvery = old }
}

// SetCodeWeight changes the weight of code blocks in queries.
func SetCodeWeight(w float64) func() {
	old := codeWeight
	codeWeight = w
	return func() { codeWeight = old }
}

// SetStaleAfter changes how long index files no manifest names are kept.
func SetStaleAfter(d time.Duration) func() {
	old := staleAfter
	staleAfter = d
	return func() { staleAfter = old }
}

// SetBreakerClock gives r's embedder breaker a clock.
func SetBreakerClock(r *Router, now func() time.Time) {
	r.embedBreak.mu.Lock()
	r.embedBreak.now = now
	r.embedBreak.mu.Unlock()
}
