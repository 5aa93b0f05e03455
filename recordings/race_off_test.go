//go:build !race

package recordings

const raceEnabled = false
