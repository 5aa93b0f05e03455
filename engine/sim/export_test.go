package sim

import (
	"context"
	"time"
)

// WatchdogQueue returns the length and capacity of the watchdog's queue of deadlines, for tests.
func WatchdogQueue(s *Sim) (n, capacity int) { return len(s.wdQueue) - s.wdHead, cap(s.wdQueue) }

// RunUntil runs s up to simulated time t (inclusive) and publishes what is running then, for tests
// of InFlight: a console reading it while Run runs sees the same.
func RunUntil(s *Sim, t int64) error {
	err := s.run(context.Background(), t)
	s.publish()
	return err
}

// SetReaderClock sets the wall clock InFlight reads to place itself on a paced simulation's pace.
func SetReaderClock(s *Sim, now func() time.Time) {
	s.running.mu.Lock()
	s.running.wallClock = now
	s.running.mu.Unlock()
}

// PaceAnchor is the wall-clock time of the pace's anchor, as last published.
func PaceAnchor(s *Sim) time.Time {
	s.running.mu.Lock()
	defer s.running.mu.Unlock()
	return s.running.pace.Wall
}

// Publications is how many times s has published what is in flight.
func Publications(s *Sim) int { return s.running.scans }

// SetMergeEdges turns the merging of a collective's identical ring edges into one flow on or off
// (startCollective), for tests that check the merge changes nothing but the work.
func SetMergeEdges(s *Sim, on bool) { s.edges.off = !on }

// FlowSlots is the most flows s has had at once (its flow slots, never given back).
func FlowSlots(s *Sim) int { return len(s.flows) }

// Solves is how many solves of s had flows to share links among.
func Solves(s *Sim) int { return s.solves }

// SolverVisits is how many flows and links the levels of s's solves have looked at.
func SolverVisits(s *Sim) uint64 { return s.visits }

// SolverSpans is how many flows and links the components of s's solves held, once per level of
// each solve: what the levels looked at when each looked at the whole component.
func SolverSpans(s *Sim) uint64 { return s.spans }

// SetWarnAbove sets the estimated CPU time of an all-to-all above which Config.Warn is told.
func SetWarnAbove(s *Sim, cpu time.Duration) { s.warnAbove = cpu }

// AllToAllCost is allToAllCost, RoundCPU roundCPU.
var (
	AllToAllCost = allToAllCost
	RoundCPU     = roundCPU
)

// SetClasses turns the start of a collective's flows as classes on or off (classes.go), for tests
// that check the classes change nothing but the work.
func SetClasses(s *Sim, on bool) { s.classesOff = !on }

// ClassCounts is how many collectives s started as blocks of classes, how many of those it split
// back into their flows, and how many of those splits came before the block's first solve.
func ClassCounts(s *Sim) (blocks, splits, early int) {
	return s.blocksStarted, s.blockSplits, s.earlySplits
}

// LastBlockAt is when s last started a collective's flows as a block of classes.
func LastBlockAt(s *Sim) int64 { return s.lastBlockAt }

// CopyLatency is the model's time from a copy's start to its bytes' first move.
func CopyLatency(m Model) int64 { return m.CopyLatencyNs }
