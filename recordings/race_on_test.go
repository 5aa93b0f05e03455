//go:build race

package recordings

// raceEnabled is true when the race detector is on: it changes what allocates, so allocation
// counts are not checked then.
const raceEnabled = true
