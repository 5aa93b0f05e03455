// Package strip draws a stream's activity as a row of cells: the timeline view's rows and the
// compare view's aligned strips are both drawn by it, so they read the same.
package strip
