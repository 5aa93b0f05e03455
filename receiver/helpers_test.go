package receiver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xfertop/xfertop/timeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const epoch = int64(1_700_000_000_000_000_000)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// resource is a full-detail sender's resource: session, host, epoch and GPUs per host.
func resource(session string, host int) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		str("service.name", "xfertop"), str("host.name", "host-"+strconv.Itoa(host)), num("xfertop.host", int64(host)),
		str("xfertop.session", session), str("xfertop.detail", "full"),
		str("xfertop.meta.epoch_unix_ns", strconv.FormatInt(epoch, 10)), str("xfertop.meta.gpus_per_host", "8"),
		str("xfertop.meta.scenario", "test"),
	}}
}

// kernelSpan is a full-detail span of a kernel event numbered seq on device dev, [start, end) ns.
func kernelSpan(seq int64, dev int32, start, end int64) *tracepb.Span {
	return &tracepb.Span{Name: "kernel", StartTimeUnixNano: uint64(epoch + start), EndTimeUnixNano: uint64(epoch + end),
		Attributes: []*commonpb.KeyValue{str("xfertop.kind", "kernel"), num("xfertop.device", int64(dev)), num("xfertop.stream", 1),
			num("xfertop.seq", seq), str("xfertop.label", "gemm")}}
}

// request holds the given spans from one host of one session.
func request(session string, host int, spans ...*tracepb.Span) *collectortrace.ExportTraceServiceRequest {
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: resource(session, host), ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}

// kernels is a request of n kernel spans numbered from seq, 1 µs each, back to back, from host 0.
func kernels(session string, seq int64, n int) *collectortrace.ExportTraceServiceRequest {
	return kernelsOn(session, 0, seq, n)
}

// kernelsOn is kernels from host (its device 8 × host).
func kernelsOn(session string, host int, seq int64, n int) *collectortrace.ExportTraceServiceRequest {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		s := seq + int64(i)
		spans[i] = kernelSpan(s, int32(8*host), s*1000, s*1000+1000)
	}
	return request(session, host, spans...)
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collect is a sink that keeps what it is given.
type collect struct{ evs []timeline.Event }

func (c *collect) Emit(e *timeline.Event) { c.evs = append(c.evs, *e) }

func attrs(kv ...*commonpb.KeyValue) []*commonpb.KeyValue { return kv }

// marshalBackwards encodes m as the Collector (pdata) does: each message's fields from the highest
// number to the lowest, so that a KeyValue's value comes before its key and a span's attributes
// before its times; the elements of a repeated field stay in their order.
func marshalBackwards(m proto.Message) []byte {
	msg := m.ProtoReflect()
	var fields []protoreflect.FieldDescriptor
	msg.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		fields = append(fields, fd)
		return true
	})
	slices.SortFunc(fields, func(a, b protoreflect.FieldDescriptor) int { return cmp.Compare(b.Number(), a.Number()) })
	var out []byte
	for _, fd := range fields {
		v := msg.Get(fd)
		if fd.IsList() {
			for i := range v.List().Len() {
				out = appendBackwards(out, fd, v.List().Get(i))
			}
			continue
		}
		out = appendBackwards(out, fd, v)
	}
	return out
}

// appendBackwards appends one value of field fd (marshalBackwards).
func appendBackwards(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
	n := fd.Number()
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), marshalBackwards(v.Message().Interface()))
	case protoreflect.StringKind:
		return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), v.String())
	case protoreflect.BytesKind:
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v.Bytes())
	case protoreflect.Fixed64Kind:
		return protowire.AppendFixed64(protowire.AppendTag(b, n, protowire.Fixed64Type), v.Uint())
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(protowire.AppendTag(b, n, protowire.Fixed64Type), math.Float64bits(v.Float()))
	case protoreflect.Fixed32Kind:
		return protowire.AppendFixed32(protowire.AppendTag(b, n, protowire.Fixed32Type), uint32(v.Uint()))
	case protoreflect.BoolKind:
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), protowire.EncodeBool(v.Bool()))
	case protoreflect.EnumKind:
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), uint64(v.Enum()))
	case protoreflect.Int64Kind, protoreflect.Int32Kind:
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), uint64(v.Int()))
	case protoreflect.Uint64Kind, protoreflect.Uint32Kind:
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v.Uint())
	}
	panic(fmt.Sprintf("marshalBackwards: field %s of kind %s", fd.FullName(), fd.Kind()))
}
