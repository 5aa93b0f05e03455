// Package comms is the console's view of the communicator cache: every entry, cached ones first
// and newest first, then evicted ones; it scrolls, so none is out of reach.
package comms
