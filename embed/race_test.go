//go:build race

package embed

// raceEnabled: the race detector drops some sync.Pool Puts at random.
const raceEnabled = true
