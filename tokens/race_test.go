//go:build race

package tokens

// raceEnabled: the race detector slows BPE counting about tenfold, so corpus
// tests take a sample under it.
const raceEnabled = true
