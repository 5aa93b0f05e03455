// Package chrome exports xfertop's events as Chrome trace JSON that Perfetto and chrome://tracing
// open, carrying every field of an event in its args (Args) so that an export imports back, through
// package kineto, to the same events.
package chrome
