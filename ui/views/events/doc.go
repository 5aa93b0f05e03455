// Package events is the console's log of recent events, newest last, searchable with `/`.
package events
