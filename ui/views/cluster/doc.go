// Package cluster is the console's cluster view: every GPU of the job at a glance, hosts × GPUs as
// a heatmap coloured and drawn by a chosen metric, the worst hosts and GPUs beside it, and a
// drill-down from a host to its GPUs to a GPU's streams in the timeline.
package cluster
