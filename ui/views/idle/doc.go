// Package idle is the console's idle view: each device's temporal breakdown and overlap, then
// every stream's idle time by cause, compute streams first; enter shows a row's largest gap in
// the timeline.
package idle
