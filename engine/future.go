package engine

// Future is the result of an asynchronous transfer. It resolves when the device reports completion,
// or fails with the error; it never resolves before the work it stands for has completed.
//
// Futures are resolved by the backend while Run executes, on Run's goroutine; read them after Run
// returns, or from an OnDone callback.
type Future struct {
	op uint64
	// pending is how many completions the future waits for beyond the one that resolves it: 0
	// for a future of one op, ranks−1 for the one future of a whole collective (Client.CollectiveAll).
	pending int32
	done    bool
	err     error
	at      int64
	buffer  *Buffer

	// OnDone, when set, runs once when the future resolves or fails, on Run's goroutine.
	OnDone func(*Future)
}

// NewFuture returns an unresolved future for op.
func NewFuture(op uint64) *Future { return &Future{op: op} }

// Op returns the op id the future belongs to.
func (f *Future) Op() uint64 { return f.op }

// Done reports whether the future has resolved or failed.
func (f *Future) Done() bool { return f.done }

// Err returns the failure, or nil. A collective's one future (Client.CollectiveAll) holds the
// first failure a rank reported from then on, before the other ranks have resolved it.
func (f *Future) Err() error { return f.err }

// At returns the time (ns since the session epoch) at which the future resolved or failed.
func (f *Future) At() int64 { return f.at }

// Buffer returns the receive buffer a receive future delivers into (nil for sends).
func (f *Future) Buffer() *Buffer { return f.buffer }

// Complete resolves (err == nil) or fails the future at time t. Backends call it, once per op the
// future stands for; a call after the future resolved is ignored, so a failure after resolution
// cannot un-resolve a future. A collective's one future (Client.CollectiveAll) takes a call from each
// rank and resolves at the last of them, failed with the first failure any rank reported.
func (f *Future) Complete(t int64, err error) {
	if f.done {
		return
	}
	if f.err == nil {
		f.err = err
	}
	if f.pending > 0 {
		f.pending--
		return
	}
	f.done, f.at = true, t
	if f.OnDone != nil {
		f.OnDone(f)
	}
}

// reset makes a prepared transfer's future reusable for its next execution.
func (f *Future) reset() { f.done, f.err, f.at = false, nil, 0 }
