//go:build !race

package scenario_test

// raceEnabled is true when the tests run under the race detector (see race_test.go).
const raceEnabled = false
