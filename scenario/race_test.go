//go:build race

package scenario_test

// raceEnabled is true when the tests run under the race detector, which makes the simulator
// several times slower: the soak test then runs a smaller matrix.
const raceEnabled = true
