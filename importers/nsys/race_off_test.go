//go:build !race

package nsys_test

// raceEnabled tells the tests that the race detector is on: it slows SQLite's Go code tenfold.
const raceEnabled = false
