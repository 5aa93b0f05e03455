// Package reorder puts the events of a trace importer in start order with bounded memory: a
// min-heap of items by (run, start, seq) whose items stay in reused slots (Heap); the check a
// survey pass plays to learn whether a sequence of starts comes out in order through a reorder
// buffer of a given size (Check); and an evenly spaced sample of starts, for the outlier check's
// median (Sample). The Nsight and Kineto importers share them.
package reorder
