// Package events is the console's log of recent events, in the order they ended (a wait when it ended), newest last, searchable with `/`.
package events
