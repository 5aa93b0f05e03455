// Package manualclock is a clock that moves only when told to, for tests that stop a replay at a
// chosen position (session.ReplayConfig.Clock): the replay sleeps on it, and the test moves it on
// and waits until the replay sleeps again, so what the replay shows then is fixed.
package manualclock
