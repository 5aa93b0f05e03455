package flightrecorder

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// TestHangDump reads the pickled dumps of a 4-rank job hung in all_reduce #5 (testdata/hang):
// every entry is an op of its rank, the unfinished ones pending, sizes × dtype as bytes, the
// process groups as communicators and their members as marks.
func TestHangDump(t *testing.T) {
	im, err := ReadFiles([]string{"testdata/hang"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Devices != 4 || im.Format != Format {
		t.Fatalf("devices %d format %q; want 4 flight-recorder", im.Devices, im.Format)
	}
	type key struct {
		kind   timeline.Kind
		status uint8
	}
	count := map[key]int{}
	for _, e := range im.Events {
		count[key{e.Kind, e.Status}]++
		if e.Kind != timeline.KindCollective {
			continue
		}
		seq, ok := e.OpSeq()
		if !ok {
			t.Fatalf("op %x carries no sequence number", e.Op)
		}
		switch {
		case e.Sub == uint8(timeline.CollAllReduce):
			if e.Bytes != 1024*1024*4 || e.Comm != 1 || e.Ranks != 4 {
				t.Errorf("all_reduce #%d on rank %d: %d bytes comm %d ranks %d; want 4 MiB (1024×1024 Float) on comm 1 of 4", seq, e.Device, e.Bytes, e.Comm, e.Ranks)
			}
			if e.Status == timeline.StatusOK && e.Dur() != 9_500_000 {
				t.Errorf("all_reduce #%d on rank %d lasts %d ns; want duration_ms 9.5", seq, e.Device, e.Dur())
			}
			if e.Status == timeline.StatusPending && (seq != 5 || im.Strings.Lookup(e.Label) != "nccl:all_reduce (started)") {
				t.Errorf("pending all_reduce #%d %q; want #5 (started)", seq, im.Strings.Lookup(e.Label))
			}
		case e.Sub == uint8(timeline.CollAllGather):
			if e.Bytes != 4096*2 || e.Comm != 2 || e.Ranks != 2 || seq != 1 {
				t.Errorf("all_gather on rank %d: %d bytes comm %d ranks %d seq %d; want 8 KiB (4096 BFloat16 out) on comm 2 of 2, #1", e.Device, e.Bytes, e.Comm, e.Ranks, seq)
			}
		default:
			t.Errorf("collective %v on rank %d", e.Sub, e.Device)
		}
	}
	want := map[key]int{
		{timeline.KindMark, timeline.StatusOK}:            6,  // 4 members of the world, 2 of the pair
		{timeline.KindCollective, timeline.StatusOK}:      18, // #1-#4 on 4 ranks, all_gather on 2
		{timeline.KindCollective, timeline.StatusPending}: 3,  // #5 on ranks 0-2
	}
	if !reflect.DeepEqual(count, want) {
		t.Errorf("events %v; want %v", count, want)
	}
	for i := 1; i < len(im.Events); i++ {
		if im.Events[i].Start < im.Events[i-1].Start {
			t.Fatalf("event %d starts before event %d", i, i-1)
		}
	}
	// Rank 1's clock is 50 µs after rank 0's: the join keeps them apart by that.
	var first [4]int64
	for d := range first {
		first[d] = -1
	}
	for _, e := range im.Events {
		if e.Kind == timeline.KindCollective && e.Status == timeline.StatusOK && first[e.Device] < 0 {
			first[e.Device] = e.Start
		}
	}
	if first[1]-first[0] != 50_000 {
		t.Errorf("rank 1's first all_reduce starts %d ns after rank 0's; want 50000", first[1]-first[0])
	}
}

// TestJSONDump reads the JSON dumps (nlohmann's sorted keys, 0 for a time not seen). An op pending
// at the dump lasts from its creation to the last time its rank's dump knows: rank 0's scheduled
// all-reduce, created last, nothing after it (0); rank 1's started one, not retired, whose
// time_discovered_started_ns (1 ms after its creation) is when the dump queried it, not a start.
func TestJSONDump(t *testing.T) {
	im, err := ReadFiles([]string{"testdata/mismatch_json"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range im.Events {
		if e.Kind == timeline.KindCollective {
			got = append(got, im.Strings.Lookup(e.Label))
			want := map[string]int64{"nccl:all_reduce (scheduled)": 0, "nccl:all_reduce (started)": 1_000_000}
			if l := im.Strings.Lookup(e.Label); e.Status == timeline.StatusPending && e.Dur() != want[l] {
				t.Errorf("%q lasts %d; want %d (from its creation to when its rank's dump saw it unfinished)", l, e.Dur(), want[l])
			}
		}
	}
	sort.Strings(got)
	want := []string{"nccl:all_reduce", "nccl:all_reduce", "nccl:all_reduce (scheduled)", "nccl:all_reduce (started)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("collectives %q; want %q", got, want)
	}
}

// torchPickle writes v as torch's C++ pickler does (torch/csrc/jit/serialization/pickler.cpp):
// PROTO 2, strings memoized (BINPUT after the first, BINGET after), ints by width (LONG1 of 8
// bytes past int32), doubles big-endian, and, when tagged (older torch), dicts and lists wrapped
// in torch.jit._pickle.restore_type_tag.
type torchPickle struct {
	b      []byte
	memo   map[string]uint32
	next   uint32
	tagged bool
}

func (p *torchPickle) put() {
	if p.next <= 255 {
		p.b = append(p.b, opBinPut, byte(p.next))
	} else {
		p.b = append(p.b, opLongBinPut)
		p.b = binary.LittleEndian.AppendUint32(p.b, p.next)
	}
	p.next++
}

func (p *torchPickle) str(s string) {
	if id, ok := p.memo[s]; ok {
		if id <= 255 {
			p.b = append(p.b, opBinGet, byte(id))
		} else {
			p.b = append(p.b, opLongBinGet)
			p.b = binary.LittleEndian.AppendUint32(p.b, id)
		}
		return
	}
	p.b = append(p.b, opBinUnicode)
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(len(s)))
	p.b = append(p.b, s...)
	p.memo[s] = p.next
	p.put()
}

func (p *torchPickle) tag(open bool) {
	if !p.tagged {
		return
	}
	if open {
		p.b = append(p.b, opGlobal)
		p.b = append(p.b, "torch.jit._pickle\nrestore_type_tag\n"...)
		return
	}
	p.str("Dict[str, Any]")
	p.b = append(p.b, opTuple2, opReduce)
}

func (p *torchPickle) value(v any) {
	switch x := v.(type) {
	case nil:
		p.b = append(p.b, opNone)
	case bool:
		p.b = append(p.b, map[bool]byte{true: opNewTrue, false: opNewFalse}[x])
	case json.Number:
		if n, err := x.Int64(); err == nil {
			switch {
			case n >= 0 && n <= 255:
				p.b = append(p.b, opBinInt1, byte(n))
			case n >= 0 && n <= 65535:
				p.b = append(p.b, opBinInt2)
				p.b = binary.LittleEndian.AppendUint16(p.b, uint16(n))
			case n >= math.MinInt32 && n <= math.MaxInt32:
				p.b = append(p.b, opBinInt)
				p.b = binary.LittleEndian.AppendUint32(p.b, uint32(int32(n)))
			default:
				p.b = append(p.b, opLong1, 8)
				p.b = binary.LittleEndian.AppendUint64(p.b, uint64(n))
			}
			return
		}
		f, _ := x.Float64()
		p.b = append(p.b, opBinFloat)
		p.b = binary.BigEndian.AppendUint64(p.b, math.Float64bits(f))
	case string:
		p.str(x)
	case []any:
		if len(x) == 2 { // the dump's only tuple: process_group, (name, desc)
			if _, ok := x[0].(string); ok {
				p.value(x[0])
				p.value(x[1])
				p.b = append(p.b, opTuple2)
				return
			}
		}
		p.tag(true)
		p.b = append(p.b, opEmptyList, opMark)
		for _, it := range x {
			p.value(it)
		}
		p.b = append(p.b, opAppends)
		p.tag(false)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		p.tag(true)
		p.b = append(p.b, opEmptyDict, opMark)
		for _, k := range keys {
			p.str(k)
			p.value(x[k])
		}
		p.b = append(p.b, opSetItems)
		p.tag(false)
	}
}

func torchDump(t *testing.T, jsonPath string, tagged bool) []byte {
	t.Helper()
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	p := &torchPickle{memo: map[string]uint32{}, tagged: tagged}
	p.b = append(p.b, opProto, 2)
	p.value(v)
	return append(p.b, opStop)
}

// TestTorchPickle: the same dump pickled as torch writes it (with and without the type tags
// older torch added) reads as its JSON form does.
func TestTorchPickle(t *testing.T) {
	want, err := ReadFiles([]string{"testdata/mismatch_json"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tagged := range []bool{false, true} {
		dir := t.TempDir()
		for r := range 2 {
			b := torchDump(t, filepath.Join("testdata/mismatch_json", "nccl_trace_rank_"+string(rune('0'+r))+".json"), tagged)
			if err := os.WriteFile(filepath.Join(dir, "nccl_trace_rank_"+string(rune('0'+r))), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := ReadFiles([]string{dir}, Options{})
		if err != nil {
			t.Fatalf("tagged %v: %v", tagged, err)
		}
		if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Strings.All(), want.Strings.All()) {
			t.Errorf("tagged %v: the pickle's events differ from the JSON's:\n%v\n%v", tagged, got.Events, want.Events)
		}
	}
}

// TestLong1 reads the widths torch's pickler writes integers in, negative ones included.
func TestLong1(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want int64
	}{
		{[]byte{opLong1, 8, 0, 0, 0, 0, 0, 0, 0, 0x40}, 1 << 62},
		{[]byte{opLong1, 2, 0xff, 0xff}, -1},
		{[]byte{opLong1, 0}, 0},
		{[]byte{opBinInt, 0xfe, 0xff, 0xff, 0xff}, -2},
	} {
		// A dump is a dict: the number is its value of key 0, {0: n}.
		b := append(append([]byte{opProto, 2, opEmptyDict, opBinInt1, 0}, c.b...), opSetItem, opStop)
		v, err := unpickle(b)
		d, ok := v.(*pdict)
		if err != nil || !ok || len(d.vals) != 1 || d.vals[0] != any(c.want) {
			t.Errorf("unpickle(%x) = %v, %v; want {0: %d}", b, v, err, c.want)
		}
	}
}

// TestBadInput: what is wrong is said with the file and where in it.
func TestBadInput(t *testing.T) {
	good := torchDump(t, "testdata/mismatch_json/nccl_trace_rank_0.json", false)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"nccl_trace_rank_0", good[:len(good)/2], "nccl_trace_rank_0 (byte "},
		{"nccl_trace_rank_0", good[:len(good)-1], "no STOP opcode: the pickle is cut"},
		{"nccl_trace_rank_0", []byte{opProto, 2, 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', ')', 'R', '.'}, "(byte 14): REDUCE calls os.system"},
		// An entry's input_sizes holding itself.
		{"nccl_trace_rank_0", append(append(append(append([]byte{opProto, 2, '}', 'X', 7, 0, 0, 0}, "entries"...), ']', '}', 'X', 11, 0, 0, 0), "input_sizes"...),
			']', 'q', 0, 'h', 0, 'a', 's', 'a', 's', '.'), "nested more than 16 deep"},
		// Garbage of one-byte opcodes is refused where it shows, not after it is all decoded.
		{"nccl_trace_rank_0", append([]byte{opProto, 4}, bytes.Repeat([]byte{']'}, 1000)...), "(byte 2): the dump's top level: expected a dict of its fields (entries, pg_config, …), found a list"},
		{"nccl_trace_rank_0", append([]byte{opProto, 4}, bytes.Repeat([]byte{'('}, 1000)...), fmt.Sprintf("(byte %d): more than %d MARKs open", 2+maxMarks, maxMarks)},
		{"nccl_trace_rank_0", append([]byte{opProto, 4, '}'}, bytes.Repeat([]byte{']'}, maxStack+10)...), fmt.Sprintf("(byte %d): more than %d values waiting on the stack", 2+maxStack, maxStack)},
		{"nccl_trace_rank_0", []byte{opProto, 4, '}', 'r', 5, 0, 0, 0, '.'}, "(byte 3): memo id 5 skips ahead of the 0 written"},
		{"nccl_trace_rank_0", append([]byte{opProto, 4, '}'}, bytes.Repeat([]byte{']', opMemoize, '0'}, 100)...), "(byte 277): memo id 91 past the bound 91 (a quarter of the pickle's 303 bytes)"},
		{"nccl_trace_rank_0", []byte{opProto, 2, 'K', 1, '.'}, "the dump's top level: expected a dict of its fields (entries, pg_config, …), found a number"},
		// A value of the wrong kind is named by its field, with what was expected and what was found.
		{"nccl_trace_rank_0", []byte(`[1, 2]`), "the dump's top level: expected a dict of its fields (entries, pg_config, …), found a list (JSON array)"},
		{"nccl_trace_rank_0", []byte(`{"pg_config": [1], "entries": []}`), "field pg_config: expected a dict of process groups by name, found a list (JSON array)"},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {"0": null}}`), `field pg_config["0"]: expected a dict of the process group's fields (name, desc, ranks), found no value (None, JSON null)`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {"0": {"ranks": {}}}}`), `pg_config["0"].ranks: expected a list of ranks, found a dict (JSON object)`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {}, "entries": "none"}`), `field entries: expected a list of the ring's entries, found the string "none"`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {}, "entries": [7]}`), `(entry 0: expected a dict of the entry's fields (profiling_name, state, …), found the number 7: left out)`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {"0": {"ranks": "[0, x]"}}}`), `pg_config["0"].ranks: rank x is not a rank`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {}, "entries": [{"profiling_name": "nccl:all_reduce", "collective_seq_id": 1, "state": "done"}, 7]}`),
			`none of its 2 entries could be read (entry 0: nccl:all_reduce: state "done" is none of scheduled, started, completed: left out)`},
		{"nccl_trace_rank_0", []byte(`{"pg_config": {}, "entries": [}`), "nccl_trace_rank_0 (byte 31): not a Flight Recorder dump"},
		{"dump.json", []byte(`{"pg_config": {}}`), "the file name does not end in it"},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(p, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFiles([]string{p}, Options{})
		var fe *FormatError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) || fe.File != p {
			t.Errorf("ReadFiles(%.80q) = %v; want a FormatError of %s containing %q", c.b, err, p, c.want)
		}
	}
}

// TestTwoDumpsOfOneRank: two files claiming one rank are refused, naming both.
func TestTwoDumpsOfOneRank(t *testing.T) {
	dir := t.TempDir()
	doc := []byte(`{"rank": 0, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}}`)
	for _, n := range []string{"a_rank_0", "b_rank_1"} {
		if err := os.WriteFile(filepath.Join(dir, n), doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ReadFiles([]string{filepath.Join(dir, "a_rank_0"), filepath.Join(dir, "b_rank_1")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "rank 0 again") || !strings.Contains(err.Error(), "a_rank_0") {
		t.Errorf("ReadFiles = %v; want rank 0 again, naming a_rank_0", err)
	}
	if _, err := Expand([]string{dir}); err == nil || !strings.Contains(err.Error(), "of 2 prefixes") {
		t.Errorf("Expand(a dir of two prefixes) = %v; want an error naming them", err)
	}
}

// FuzzRead: any bytes read as a dump give events or an error, never a panic, and within the
// input's bounds.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/hang/nccl_trace_rank_0", "testdata/hang/nccl_trace_rank_3", "testdata/mismatch_json/nccl_trace_rank_1.json",
		realJob + "/torch2/fr/nccl_trace_rank_1", realJob + "/torch2/fr/nccl_trace_rank_0.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{opProto, 2, ']', 'q', 0, 'h', 0, 'a', '.'})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "nccl_trace_rank_0")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := ReadFiles([]string{p}, Options{})
		if err != nil {
			return
		}
		if len(im.Events) > len(b) {
			t.Fatalf("%d events of %d bytes", len(im.Events), len(b))
		}
		// An op of unknown time is a completed busy op placed at one instant, never one that
		// lasts or one left pending (whose time runs to the dump's).
		for _, e := range im.Events {
			if e.Aux&timeline.AuxTimeUnknown != 0 && (!e.Kind.IsBusy() || e.End != e.Start || e.Status != timeline.StatusOK) {
				t.Fatalf("op of unknown time %+v: want a completed busy op with End at Start", e)
			}
		}
	})
}

// TestSendRecv: a send's and a receive's peers are their group ranks turned into job ranks, and
// the pair shares one op (their p2p sequence number on the group).
func TestSendRecv(t *testing.T) {
	dir := t.TempDir()
	for r, name := range map[int]string{2: "nccl:send 0->1", 3: "nccl:recv 1<-0"} {
		doc := fmt.Sprintf(`{"version": "2.10", "pg_config": {"4": {"name": "4", "desc": "pp", "ranks": "[2, 3]"}},
			"entries": [{"record_id": 0, "process_group": ["4", "pp"], "collective_seq_id": 0, "p2p_seq_id": 1, "profiling_name": %q,
			"time_created_ns": 1764230400000000000, "time_discovered_started_ns": 0, "time_discovered_completed_ns": 0,
			"input_sizes": [[1024]], "input_dtypes": ["BFloat16"], "output_sizes": [[1024]], "output_dtypes": ["BFloat16"], "state": "started", "is_p2p": true}]}`, name)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("nccl_trace_rank_%d", r)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	im, err := ReadFiles([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []uint64
	for _, e := range im.Events {
		switch e.Kind {
		case timeline.KindSend:
			if e.Device != 2 || e.Peer != 3 || e.Bytes != 2048 || e.Status != timeline.StatusPending {
				t.Errorf("send: device %d peer %d bytes %d status %d; want 2 → 3, 2 KiB, pending", e.Device, e.Peer, e.Bytes, e.Status)
			}
			ops = append(ops, e.Op)
		case timeline.KindRecv:
			if e.Device != 3 || e.Peer != 2 {
				t.Errorf("recv: device %d peer %d; want 3 ← 2", e.Device, e.Peer)
			}
			ops = append(ops, e.Op)
		}
	}
	if len(ops) != 2 || ops[0] != ops[1] {
		t.Errorf("ops %x; want the send's and the receive's the same", ops)
	}
}

// TestReadBounds: a dump past the file bound, a JSON dump with a string past the token bound, and
// a JSON dump cut short are refused naming the byte where it shows.
func TestReadBounds(t *testing.T) {
	good, err := os.ReadFile("testdata/mismatch_json/nccl_trace_rank_0.json")
	if err != nil {
		t.Fatal(err)
	}
	long := []byte(`{"version": "2.9", "pg_config": {}, "entries": [{"profiling_name": "` + strings.Repeat("a", 5000) + `"}]}`)
	for _, c := range []struct {
		name string
		b    []byte
		opts Options
		want string
	}{
		{"file bound", good, Options{MaxFileBytes: 100}, "(byte 100): more than 100 bytes (--max-input-bytes"},
		{"token bound", long, Options{MaxTokenBytes: 1000}, fmt.Sprintf("(byte %d): a string or number longer than 1000 bytes (--max-token-bytes)", bytes.Index(long, []byte("aaaa"))+1000)},
		{"number past the token bound", []byte(`{"entries": [` + strings.Repeat("1", 2000) + `]}`), Options{MaxTokenBytes: 1000}, "(byte 1013): a string or number longer than 1000 bytes"},
		{"escapes count", []byte(`{"entries": ["` + strings.Repeat(`\"`, 600) + `"]}`), Options{MaxTokenBytes: 1000}, "(byte 1014): a string or number longer"},
		{"cut short", good[:815], Options{}, "(byte 815): not a Flight Recorder dump (pickle or JSON): the JSON ends before it is complete"},
		{"within the bounds", good, Options{MaxFileBytes: int64(len(good)), MaxTokenBytes: 1000}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "nccl_trace_rank_0")
			if err := os.WriteFile(p, c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readFile(p, newRankSets(), c.opts.limits())
			if c.want == "" {
				if err != nil {
					t.Fatalf("readFile = %v; want it read", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("readFile = %v; want %q", err, c.want)
			}
		})
	}
}
