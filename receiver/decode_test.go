package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xfertop/xfertop/timeline"
)

// refKinds are the kinds by name, as the reference reads them.
var refKinds = func() map[string]timeline.Kind {
	m := map[string]timeline.Kind{}
	for k := timeline.Kind(1); k.String() != fmt.Sprintf("kind(%d)", uint8(k)); k++ {
		m[k.String()] = k
	}
	return m
}()

// reference decodes a request through the generated types: what Decode must find, field by field.
func reference(req *collectortrace.ExportTraceServiceRequest) (spans []Span, labels []string, foreign int64) {
	labels = []string{""}
	ids := map[string]uint32{}
	for ri, rs := range req.ResourceSpans {
		host := -1
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "xfertop.host" {
				if v, ok := intOf(a.Value); ok && v >= 0 && v <= math.MaxUint16 {
					host = int(v)
				}
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				e := timeline.Event{Device: timeline.NoDevice, Peer: timeline.NoDevice, Start: int64(sp.StartTimeUnixNano), End: int64(sp.EndTimeUnixNano)}
				if host >= 0 {
					e.Host = uint16(host)
				}
				seq := int64(-1)
				a := map[string]*commonpb.AnyValue{}
				for _, kv := range sp.Attributes {
					a[kv.Key] = kv.Value // the last one wins, as in Decode
				}
				iv := func(k string) (int64, bool) { return intOf(a[k]) }
				sv := func(k string) string { return string(bytesOf(a[k])) }
				k, ok := refKinds[sv("xfertop.kind")]
				if !ok {
					foreign++
					continue
				}
				if v, _ := iv("xfertop.tail"); v != 0 {
					continue
				}
				e.Kind = k
				set := func(key string, f func(int64)) {
					if v, ok := iv(key); ok {
						f(v)
					}
				}
				set("xfertop.seq", func(v int64) { seq = v })
				set("xfertop.device", func(v int64) { e.Device = int32(v) })
				set("xfertop.peer", func(v int64) { e.Peer = int32(v) })
				set("xfertop.stream", func(v int64) { e.Stream = uint32(v) })
				set("xfertop.priority", func(v int64) { e.Priority = int8(v) })
				set("xfertop.op", func(v int64) { e.Op = uint64(v) })
				set("xfertop.bytes", func(v int64) { e.Bytes = v })
				set("xfertop.communicator", func(v int64) { e.Comm = uint32(v) })
				set("xfertop.group", func(v int64) { e.Group = uint32(v) })
				set("xfertop.barrier", func(v int64) { e.Barrier = uint32(v) })
				set("xfertop.ranks", func(v int64) { e.Ranks = uint16(v) })
				set("xfertop.status", func(v int64) { e.Status = uint8(v) })
				set("xfertop.queued_ns", func(v int64) { e.Queued = v })
				if v, ok := iv("xfertop.sub"); ok {
					e.Sub = uint8(v)
				} else if c, ok := copyByName[sv("xfertop.copy.direction")]; ok && k == timeline.KindMemcpy {
					e.Sub = uint8(c)
				} else if c, ok := timeline.ParseCollOp(sv("xfertop.collective")); ok && k == timeline.KindCollective {
					e.Sub = uint8(c)
				}
				if v, ok := iv("xfertop.aux"); ok {
					e.Aux = uint32(v)
				} else if v, ok := iv("xfertop.step"); ok && k == timeline.KindStep {
					e.Aux = uint32(v)
				} else if v, ok := iv("xfertop.group.ops"); ok && k == timeline.KindGroupLaunch {
					e.Aux = uint32(v)
				}
				if l := sv("xfertop.label"); l != "" {
					id, ok := ids[l]
					if !ok {
						id = uint32(len(labels))
						labels = append(labels, l)
						ids[l] = id
					}
					e.Label = id
				}
				spans = append(spans, Span{Event: e, Seq: seq, Res: int32(ri)})
			}
		}
	}
	return spans, labels, foreign
}

func intOf(v *commonpb.AnyValue) (int64, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return x.IntValue, true
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return 1, true
		}
		return 0, true
	case *commonpb.AnyValue_DoubleValue:
		return int64(x.DoubleValue), true
	}
	return 0, false
}

func bytesOf(v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return []byte(x.StringValue)
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	}
	return nil
}

// sample is a request with every kind of attribute Decode reads, a foreign span and a tail root.
func sample() *collectortrace.ExportTraceServiceRequest {
	coll := &tracepb.Span{StartTimeUnixNano: uint64(epoch + 10), EndTimeUnixNano: uint64(epoch + 90), Attributes: attrs(
		str("xfertop.kind", "collective"), str("xfertop.collective", "reduce_scatter"), num("xfertop.ranks", 8), num("xfertop.device", 3),
		num("xfertop.op", 77), num("xfertop.bytes", 1<<20), num("xfertop.communicator", 2), num("xfertop.group", 5), num("xfertop.seq", 4),
		num("xfertop.priority", -3), num("xfertop.stream", 9), num("xfertop.queued_ns", 7), num("xfertop.status", 2))}
	alert := &tracepb.Span{StartTimeUnixNano: uint64(epoch + 100), EndTimeUnixNano: uint64(epoch + 100), Attributes: attrs(
		str("xfertop.kind", "alert"), str("xfertop.label", "watchdog: send op 9 waited 2000 ms"), num("xfertop.peer", 4), num("xfertop.seq", 5))}
	step := &tracepb.Span{StartTimeUnixNano: uint64(epoch), EndTimeUnixNano: uint64(epoch + 200), Attributes: attrs(
		str("xfertop.kind", "step"), num("xfertop.step", 12), num("xfertop.seq", 6))}
	tail := &tracepb.Span{Attributes: attrs(str("xfertop.kind", "step"), &commonpb.KeyValue{Key: "xfertop.tail", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})}
	foreign := &tracepb.Span{Name: "HTTP GET", Attributes: attrs(str("http.method", "GET"))}
	return request("abc", 1, kernelSpan(3, 8, 0, 10), coll, alert, step, tail, foreign)
}

func TestDecodeMatchesGeneratedTypes(t *testing.T) {
	req := sample()
	var d Decoded
	if err := Decode(marshal(t, req), &d, 0); err != nil {
		t.Fatal(err)
	}
	spans, labels, foreign := reference(req)
	if !reflect.DeepEqual(d.Spans, spans) || !reflect.DeepEqual(d.Strings, labels) || d.Foreign != foreign || d.Tails != 1 {
		t.Fatalf("Decode:\n%+v %q foreign %d tails %d\nreference:\n%+v %q foreign %d", d.Spans, d.Strings, d.Foreign, d.Tails, spans, labels, foreign)
	}
	r := d.Resources[0]
	if r.Session != "abc" || r.HostName != "host-1" || r.Host != 1 || r.Detail != "full" || len(r.Meta) != 3 || r.Spans != 4 || r.MaxEnd != epoch+200 {
		t.Errorf("resource %+v", r)
	}
	if c := d.Spans[1].Event; timeline.CollOp(c.Sub) != timeline.CollReduceScatter || c.Priority != -3 || c.Status != 2 || c.Queued != 7 {
		t.Errorf("collective %+v", c)
	}
}

// The Collector writes every message's fields backwards (pdata): a KeyValue's value before its key.
// Decode reads that layout, the exporters' and the two in one request (the key cache's places
// then change layout and key from one span to the next) as the generated types do.
func TestDecodeCollectorLayout(t *testing.T) {
	reqs := map[string][]byte{
		"sample, backwards":  marshalBackwards(sample()),
		"kernels, backwards": marshalBackwards(kernels("s", 0, 5)),
		// Two ResourceSpans in one request: the exporters' layout, then the Collector's.
		"both":                append(marshal(t, kernels("a", 0, 3)), marshalBackwards(sample())...),
		"both, the other way": append(marshalBackwards(kernels("a", 0, 3)), marshal(t, sample())...),
		// At a place read in place for the spans before it, a double, bytes, and a key of the same
		// length as the one before: read in full.
		"other values, backwards": marshalBackwards(request("s", 0, kernelSpan(1, 2, 0, 10),
			&tracepb.Span{Attributes: attrs(str("xfertop.kind", "kernel"), &commonpb.KeyValue{Key: "xfertop.device", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 3}}},
				&commonpb.KeyValue{Key: "xfertop.stream", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1}}}}, num("xfertop.seq", 2), str("xfertop.tabel", "x"))},
			kernelSpan(3, 2, 20, 30))),
	}
	for name, b := range reqs {
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: the generated types refuse it: %v", name, err)
		}
		spans, labels, foreign := reference(&req)
		var d Decoded
		if err := Decode(b, &d, 0); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(d.Spans, spans) || !reflect.DeepEqual(d.Strings, labels) || d.Foreign != foreign {
			t.Errorf("%s: Decode:\n%+v %q %d\nreference:\n%+v %q %d", name, d.Spans, d.Strings, d.Foreign, spans, labels, foreign)
		}
	}
}

// Damaged requests: an error naming the byte offset, never a panic.
func TestDecodeErrors(t *testing.T) {
	good := marshal(t, sample())
	var d Decoded
	for _, n := range []int{1, 2, 5, 17, len(good) / 2, len(good) - 1} {
		err := Decode(good[:n], &d, 0)
		var de *DecodeError
		if err == nil {
			continue // a cut on a field boundary is a shorter valid request
		}
		if !errors.As(err, &de) || de.Offset < 0 || de.Offset > n {
			t.Errorf("Decode(first %d bytes) = %v; want a DecodeError with an offset in the input", n, err)
		}
	}
	if err := Decode(good, &d, 3); !errors.Is(err, ErrTooManySpans) {
		t.Errorf("6 spans with a limit of 3: %v", err)
	}
}

// FuzzDecode: Decode never panics, and whenever the generated types accept a request, Decode finds
// the same events in it.
func FuzzDecode(f *testing.F) {
	f.Add(marshal(f, sample()))
	f.Add(marshal(f, kernels("s", 0, 3)))
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Add(marshalBackwards(sample())) // the Collector's layout
	f.Add(append(marshal(f, kernels("a", 0, 3)), marshalBackwards(sample())...))
	// A span as an OTLP exporter writes it in full (ids, name, kind, events, status, an attribute
	// of each value type) and the same with an attribute whose length runs past its span: the
	// fast paths of span and scopeSpans against the generated types.
	full := kernelSpan(1, 2, 0, 10)
	full.TraceId, full.SpanId, full.ParentSpanId, full.Kind = make([]byte, 16), make([]byte, 8), make([]byte, 8), tracepb.Span_SPAN_KIND_INTERNAL
	full.Events = []*tracepb.Span_Event{{Name: "e", TimeUnixNano: uint64(epoch)}}
	full.Status = &tracepb.Status{Message: "ok", Code: tracepb.Status_STATUS_CODE_OK}
	full.Attributes = append(full.Attributes, &commonpb.KeyValue{Key: "xfertop.aux", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 3}}},
		&commonpb.KeyValue{Key: "xfertop.bytes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1}}}})
	b := marshal(f, request("s", 0, full))
	f.Add(b)
	if i := bytes.Index(b, []byte("xfertop.kind")); i > 2 {
		cut := bytes.Clone(b)
		cut[i-3]++ // the KeyValue's length: one past its end
		f.Add(cut)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoded
		err := Decode(b, &d, 0)
		var req collectortrace.ExportTraceServiceRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		if err != nil {
			t.Fatalf("the generated types accept the request, Decode does not: %v", err)
		}
		spans, labels, foreign := reference(&req)
		if len(spans) == 0 && len(d.Spans) == 0 {
			spans = d.Spans
		}
		if !reflect.DeepEqual(d.Spans, spans) || !reflect.DeepEqual(d.Strings, labels) || d.Foreign != foreign {
			t.Fatalf("Decode:\n%+v %q %d\nreference:\n%+v %q %d", d.Spans, d.Strings, d.Foreign, spans, labels, foreign)
		}
	})
}

// Every kind is found by its name, and nothing else is a kind.
func TestKindOf(t *testing.T) {
	n := 0
	for k := timeline.Kind(1); k.String() != fmt.Sprintf("kind(%d)", uint8(k)); k++ {
		if got, ok := kindOf([]byte(k.String())); !ok || got != k {
			t.Errorf("kindOf(%q) = %v, %v; want %v", k.String(), got, ok, k)
		}
		n++
	}
	if n < 20 {
		t.Errorf("only %d kinds found", n)
	}
	for _, name := range []string{"", "kernels", "Kernel", "kerne", "kind(1)", strings.Repeat("x", 300)} {
		if k, ok := kindOf([]byte(name)); ok {
			t.Errorf("kindOf(%q) = %v; want no kind", name, k)
		}
	}
}

// The key cache finds each attribute's key whatever was at its place before: the same key, another
// known one, an unknown one (then a known one again), and past the places it keeps.
func TestKeyCache(t *testing.T) {
	var c keyCache
	for _, tt := range []struct {
		place int
		key   string
		want  attrKey
	}{
		{0, "xfertop.kind", keyKind}, {0, "xfertop.kind", keyKind}, {0, "xfertop.seq", keySeq},
		{1, "http.method", 0}, {1, "http.method", 0}, {1, "http.route", 0}, {1, "xfertop.device", keyDevice},
		{1, "xfertop.device", keyDevice}, {20, "xfertop.label", keyLabel}, {20, "other", 0}, {0, "", 0},
	} {
		if got := c.find(tt.place, []byte(tt.key), false); got != tt.want {
			t.Errorf("find(%d, %q) = %d; want %d", tt.place, tt.key, got, tt.want)
		}
	}
	for k, name := range attrNames {
		if k > 0 && (name == "" || attrKeys[name] != attrKey(k)) {
			t.Errorf("attrNames[%d] = %q, found as %d", k, name, attrKeys[name])
		}
	}
}

// An attribute in the Collector's layout is read in place only where it holds the key last seen at
// its place, laid out the same, with a string or an int; whatever path reads it, Decode finds what
// the generated types find. Each case is a span whose attribute at place 0 (after a first span
// that set the place's key and layout) is the case's KeyValue.
func TestDecodeAttributeInPlace(t *testing.T) {
	kvOf := func(key string, val []byte, valueFirst bool) []byte {
		k := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
		v := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), val)
		if valueFirst {
			return append(v, k...)
		}
		return append(k, v...)
	}
	// span is a span holding the given KeyValues as its attributes, then xfertop.kind.
	span := func(kvs ...[]byte) []byte {
		var b []byte
		for _, kv := range append(kvs, kvOf("xfertop.kind", protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "kernel"), true)) {
			b = protowire.AppendBytes(protowire.AppendTag(b, 9, protowire.BytesType), kv)
		}
		return protowire.AppendFixed64(protowire.AppendTag(b, 7, protowire.Fixed64Type), uint64(epoch))
	}
	request := func(spans ...[]byte) []byte {
		var ss []byte
		for _, sp := range spans {
			ss = protowire.AppendBytes(protowire.AppendTag(ss, 2, protowire.BytesType), sp)
		}
		rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	}
	intVal := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 300)
	strVal := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "gemm")
	dblVal := protowire.AppendFixed64(protowire.AppendTag(nil, 4, protowire.Fixed64Type), math.Float64bits(7))
	long := "xfertop." + strings.Repeat("k", 0x80)
	first := kvOf("xfertop.device", intVal, true)
	for _, tt := range []struct {
		name string
		kv   []byte
	}{
		{"the same key and layout", kvOf("xfertop.device", protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 5), true)},
		{"the key, its value after it", kvOf("xfertop.device", intVal, false)},
		{"another key", kvOf("xfertop.stream", intVal, true)},
		{"a key of the same length", kvOf("xfertop.devicf", intVal, true)},
		{"a string", kvOf("xfertop.device", strVal, true)},
		{"a double", kvOf("xfertop.device", dblVal, true)},
		{"no value", kvOf("xfertop.device", nil, true)},
		{"an empty KeyValue", nil},
		{"a key of 136 bytes", kvOf(long, intVal, true)},
		{"the key field alone", protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "xfertop.device")},
		{"the value field alone", protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), intVal)},
	} {
		b := request(span(first), span(tt.kv), span(first))
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: the generated types refuse it: %v", tt.name, err)
		}
		spans, labels, foreign := reference(&req)
		var d Decoded
		if err := Decode(b, &d, 0); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(d.Spans, spans) || !reflect.DeepEqual(d.Strings, labels) || d.Foreign != foreign {
			t.Errorf("%s: Decode:\n%+v %q %d\nreference:\n%+v %q %d", tt.name, d.Spans, d.Strings, d.Foreign, spans, labels, foreign)
		}
	}
}

// A KeyValue is read on the fast path whichever of its two fields comes first: the Collector
// (pdata) writes the value before the key. Anything else (a field twice, a third field, a value
// that is neither a string nor an int) is left to keyValue.
func TestFastKeyValueEitherOrder(t *testing.T) {
	key := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("xfertop.device"))
	intVal := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 7)
	strVal := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("gemm"))
	anyOf := func(v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), v)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tt := range []struct {
		name string
		kv   []byte
		ok   bool
		want value
	}{
		{"key, int", cat(key, anyOf(intVal)), true, value{i: 7, isInt: true}},
		{"int, key (pdata)", cat(anyOf(intVal), key), true, value{i: 7, isInt: true}},
		{"string, key (pdata)", cat(anyOf(strVal), key), true, value{s: []byte("gemm")}},
		{"key twice", cat(key, key), false, value{}},
		{"a third field", cat(key, anyOf(intVal), key), false, value{}},
		{"a double", cat(key, anyOf(protowire.AppendFixed64(protowire.AppendTag(nil, 4, protowire.Fixed64Type), 0))), false, value{}},
		{"no value", key, false, value{}},
	} {
		k, v, ok := fastKeyValue(tt.kv)
		if ok != tt.ok || ok && (string(k) != "xfertop.device" || !reflect.DeepEqual(v, tt.want)) {
			t.Errorf("%s: fastKeyValue = %q, %+v, %v; want ok %v, %+v", tt.name, k, v, ok, tt.ok, tt.want)
		}
		// Whichever path reads it, the full reader agrees.
		if fk, fv, err := keyValue(reader{buf: tt.kv}); ok && (err != nil || string(fk) != string(k) || !reflect.DeepEqual(fv, v)) {
			t.Errorf("%s: keyValue = %q, %+v, %v", tt.name, fk, fv, err)
		}
	}
}
