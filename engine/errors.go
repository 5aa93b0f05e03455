package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/xfertop/xfertop/units"
)

// Sentinel errors that callers branch on with errors.Is.
var (
	ErrEmptyDevices    = errors.New("empty device set")
	ErrSizeMismatch    = errors.New("size mismatch")
	ErrUnknownPeer     = errors.New("unknown peer")
	ErrDuplicateDevice = errors.New("duplicate device")
	ErrPeerTimeout     = errors.New("peer never posted its half")
	ErrPoolExhausted   = errors.New("receive pool exhausted")
	ErrCommFailed      = errors.New("communicator failed")
	ErrCanceled        = errors.New("run canceled")
)

// CanceledError ends a run whose context was cancelled. It says why, in the words of the context's
// cause (a signal, a failed recording, a user's quit) rather than Go's "context canceled", and, on
// the simulator, at what simulated time. errors.Is matches ErrCanceled; Unwrap returns the cause.
type CanceledError struct {
	Cause error // context.Cause of the run's context
	AtNs  int64 // the simulated time the run stopped at; -1 where there is no simulated clock
}

// Canceled is the error of a run stopped at atNs (-1: unknown) because ctx is done.
func Canceled(ctx context.Context, atNs int64) error {
	return &CanceledError{Cause: context.Cause(ctx), AtNs: atNs}
}

func (e *CanceledError) Error() string {
	why := ErrCanceled.Error()
	switch {
	case e.Cause == nil || errors.Is(e.Cause, context.Canceled): // no cause given: nothing more to say
	case errors.Is(e.Cause, context.DeadlineExceeded):
		why = "run canceled: its time limit passed"
	default:
		why = e.Cause.Error()
	}
	if e.AtNs >= 0 {
		why += fmt.Sprintf(" at %.3f ms simulated", float64(e.AtNs)/1e6)
	}
	return why
}

// Is reports whether target is ErrCanceled.
func (e *CanceledError) Is(target error) bool { return target == ErrCanceled }

// Unwrap returns the cause.
func (e *CanceledError) Unwrap() error { return e.Cause }

// GuardError is returned when an API call is given arguments that cannot work: it names the call,
// the devices involved and what is wrong. errors.Is matches its Kind sentinel.
type GuardError struct {
	Op      string     // the API call, e.g. "SendBuffers"
	Kind    error      // one of the sentinel errors above
	Devices []DeviceID // the devices concerned
	Detail  string
}

func (e *GuardError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %v: %s (devices %v)", e.Op, e.Kind, e.Detail, e.Devices)
	}
	return fmt.Sprintf("%s: %v (devices %v)", e.Op, e.Kind, e.Devices)
}

// Unwrap returns the sentinel kind.
func (e *GuardError) Unwrap() error { return e.Kind }

// WatchdogError ends a run whose transfer waited longer than the watchdog timeout for its peer.
type WatchdogError struct {
	Op       string // "send", "recv", "all_reduce", ...
	OpID     uint64
	Rank     DeviceID // the rank that waited
	Peer     DeviceID // the rank that never posted its half (-1: several)
	Bytes    int64
	WaitedNs int64
	Missing  []DeviceID // for collectives and barriers: the ranks that never arrived
}

func (e *WatchdogError) Error() string {
	if len(e.Missing) > 0 {
		return fmt.Sprintf("watchdog: %s op %d on rank %d waited %s for ranks %v that never arrived (%s)",
			e.Op, e.OpID, e.Rank, units.Dur(e.WaitedNs), e.Missing, units.Bytes(e.Bytes))
	}
	return fmt.Sprintf("watchdog: %s op %d from rank %d waited %s for rank %d, which never posted its half (%s)",
		e.Op, e.OpID, e.Rank, units.Dur(e.WaitedNs), e.Peer, units.Bytes(e.Bytes))
}

// Unwrap returns ErrPeerTimeout.
func (e *WatchdogError) Unwrap() error { return ErrPeerTimeout }

// DeadlockError ends a run in which work remains but nothing can make progress (for example a
// stream waits for an event that nothing will record) and no watchdog was armed.
type DeadlockError struct {
	Pending int    // ops that could not run
	First   string // a description of one of them
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("deadlock: %d ops can never run; first: %s", e.Pending, e.First)
}
