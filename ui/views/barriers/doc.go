// Package barriers is the console's barrier view: one barrier at a time, newest first, with each
// rank's wait and the straggler marked, under the ranks most often last.
package barriers
