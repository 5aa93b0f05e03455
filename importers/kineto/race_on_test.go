//go:build race

package kineto

// raceEnabled tells the tests that the race detector is on: it slows the importer tenfold.
const raceEnabled = true
