// Package overview is the console's first view: per GPU where its time went and the top cause of
// its idle gaps, next to each link's use as a share of peak and a throughput history.
package overview
