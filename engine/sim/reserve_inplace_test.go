package sim

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/engine/topology"
	"github.com/xfertop/xfertop/timeline"
)

// dirty sets every field of the struct v points to that is a number or a bool to a value no
// reserve writes (7, true), whatever fields the struct has: a field added later and not written
// by reserve keeps it, and the comparison below finds it.
func dirty(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // unexported fields too
		switch f.Kind() {
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
			f.SetInt(7)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
			f.SetUint(7)
		case reflect.Bool:
			f.SetBool(true)
		}
	}
}

// reserve writes a launch's op into its slot field by field (opSpec.set), not as a whole value
// built elsewhere and copied in. Over a slot whose every field holds something else (an earlier
// op with sizes and a future, numbers and flags set), the slot must come out as the whole value
// would have made it: every field of opState and of opSpec written, the op's rarely used part
// (more) dropped or made.
func TestReserveWritesWholeSlot(t *testing.T) {
	tp, err := topology.Builtin("h100x8")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Topology: tp, Seed: 1}, nil, timeline.NewStrings())
	if err != nil {
		t.Fatal(err)
	}
	earlier := engine.StreamOp{Kind: engine.OpCollective, Stream: 9, Device: 3, Peer: 4, Dir: timeline.CopyP2P,
		Pageable: true, Bytes: 99, Duration: 98, Event: 97, ID: 96, Coll: timeline.CollRaggedAllToAll,
		Ranks: []engine.DeviceID{3, 4}, Sizes: []int64{1, 2}, RecvSizes: []int64{3, 4}, Comm: 95, Group: 94,
		Barrier: 93, Label: 92, NCCLAlgo: 1, NCCLProto: 1, Future: engine.NewFuture(96), Graph: 91}
	for _, op := range []engine.StreamOp{
		{Kind: engine.OpKernel, Stream: 1, Device: 0, Peer: -1, Duration: 5_000, Label: 2},
		{Kind: engine.OpSend, Stream: 2, Device: 1, Peer: 2, Bytes: 1 << 20, ID: 11, Comm: 3, Future: engine.NewFuture(11)},
		{Kind: engine.OpCollective, Stream: 3, Device: 2, Peer: -1, Coll: timeline.CollRaggedAllToAll, Bytes: 6,
			Ranks: []engine.DeviceID{2, 5}, Sizes: []int64{0, 6}, RecvSizes: []int64{7, 0}, Comm: 4, Label: 5,
			NCCLAlgo: 2, NCCLProto: 2, Future: engine.NewFuture(12), ID: 12},
		{Kind: engine.OpGroup, Stream: 4, Device: 3, Peer: -1, Group: 8, Parts: []engine.StreamOp{{Kind: engine.OpSend}}},
	} {
		oi := s.takeSlot()
		o := s.op(oi)
		o.op = specOf(&earlier)
		dirty(reflect.ValueOf(o).Elem())
		dirty(reflect.ValueOf(&o.op).Elem())
		s.freeOps = append(s.freeOps, oi) // freed without clearing: reserve must not rely on it
		got := s.reserve(&op)
		if got != oi {
			t.Fatalf("reserve took slot %d; want the free slot %d", got, oi)
		}
		want := opState{op: specOf(&op), waitAt: -1, parent: -1, inst: -1, gen: s.gens[oi], next: -1}
		if !reflect.DeepEqual(*s.op(oi), want) {
			t.Errorf("%v op: slot after reserve\n%+v\nwant\n%+v", op.Kind, *s.op(oi), want)
		}
	}
}
