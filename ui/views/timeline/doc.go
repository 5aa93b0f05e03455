// Package timeline is the console's timeline view: one row per stream, grouped by device
// (collapsible), drawn as cells of activity, with zoom, pan, a cursor and follow-live.
package timeline
