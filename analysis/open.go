package analysis

import "slices"

// maxOpenInstances bounds the collectives and barriers waiting for their other ranks; past it the
// oldest is given up and counted incomplete (a rank that never reported, a truncated trace).
const maxOpenInstances = 8192

// openSet holds the instances (collectives, barriers) whose ranks have not all reported yet, by op
// id, at most maxOpenInstances of them. Finished instances are kept for reuse, so that the steady
// state allocates nothing.
type openSet[T any] struct {
	byOp  map[uint64]*T
	order []uint64 // ids opened, oldest first; may still hold ids since finished
	free  []*T
	given int64 // instances given up incomplete
	// evict, when set, is shown each instance given up before it is forgotten (its parts are
	// still figures: the collectives keep them as a partial row).
	evict func(*T)
}

func newOpenSet[T any]() openSet[T] { return openSet[T]{byOp: map[uint64]*T{}} }

// get returns the open instance of op, or nil.
func (o *openSet[T]) get(op uint64) *T { return o.byOp[op] }

// open returns a zeroed instance for op (reused when one is free), held until done; an op id of 0
// is never held: such an instance is its own, complete at once.
func (o *openSet[T]) open(op uint64) *T {
	var in *T
	if n := len(o.free); n > 0 {
		in, o.free = o.free[n-1], o.free[:n-1]
	} else {
		in = new(T)
	}
	if op == 0 {
		return in
	}
	o.byOp[op] = in
	o.order = append(o.order, op)
	for len(o.byOp) > maxOpenInstances && len(o.order) > 0 {
		id := o.order[0]
		o.order = o.order[1:]
		if old, ok := o.byOp[id]; ok {
			if o.evict != nil {
				o.evict(old)
			}
			delete(o.byOp, id)
			o.given++
		}
	}
	if len(o.order) > 4*maxOpenInstances {
		o.order = slices.DeleteFunc(o.order, func(id uint64) bool { _, ok := o.byOp[id]; return !ok })
	}
	return in
}

// done forgets op's instance and keeps in for reuse.
func (o *openSet[T]) done(op uint64, in *T) {
	delete(o.byOp, op)
	o.free = append(o.free, in)
}

// len returns how many instances are open.
func (o *openSet[T]) len() int { return len(o.byOp) }
