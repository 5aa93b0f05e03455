package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// namesSeen is a timeline.HostNamer that notes each name with the events read before it.
type namesSeen struct {
	events *int
	got    []string
}

func (n *namesSeen) NameHost(h int32, name string) {
	n.got = append(n.got, fmt.Sprintf("host %d %s after %d events", h, name, *n.events))
}

// A name a live source learns after the recording began (a rank that joins attach names its host)
// is recorded: a reader tells it before the events that follow it, and its Meta carries it once
// read. A name learned after the last events is kept too; an empty name, a negative host and a
// name too long to read back are not recorded.
func TestRecorderHostNames(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	strs := timeline.NewStrings()
	rec, err := NewRecorder(w, strs, Meta{Source: "attach", Extra: map[string]string{timeline.HostsInEventsKey: "1"}}, FlushEvery(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rec.NameHost(0, "node-a")
	rec.NameHost(-1, "nowhere")
	rec.NameHost(2, "")
	rec.NameHost(3, strings.Repeat("x", maxHostName+1))
	for i := range 3 {
		rec.Emit(&timeline.Event{Kind: timeline.KindSend, Start: int64(i), End: int64(i) + 10, Device: 0, Host: 0})
	}
	rec.NameHost(1, "node-b")
	rec.Emit(&timeline.Event{Kind: timeline.KindRecv, Start: 5, End: 20, Device: 1, Host: 1})
	rec.NameHost(5, "node-f") // no event of host 5 follows
	if err := rec.Close(nil); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader("mem", bytesReaderAt(buf.Bytes()), int64(buf.Len()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := timeline.HostNames(r.Meta()); len(got) != 0 {
		t.Errorf("Meta on open names %v; want no host (the Meta chunk was written before any name)", got)
	}
	events := 0
	seen := &namesSeen{events: &events}
	r.NameHostsTo(seen)
	for r.Next() {
		events += len(r.At())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// Each name comes before the first event of its host (host 1's is the fourth); the recorder
	// may write it earlier, with the batch of events it was learned in the middle of.
	var before [2]int
	if n, err := fmt.Sscanf(strings.Join(seen.got[:min(len(seen.got), 2)], " "), "host 0 node-a after %d events host 1 node-b after %d events", &before[0], &before[1]); n != 2 ||
		before[0] != 0 || before[1] > 3 || len(seen.got) != 3 || !strings.HasPrefix(seen.got[2], "host 5 node-f after ") {
		t.Errorf("names told %q (%v); want node-a before every event, node-b before the fourth, then node-f", seen.got, err)
	}
	if got, want := timeline.HostNames(r.Meta()), map[int32]string{0: "node-a", 1: "node-b", 5: "node-f"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Meta after reading names %v; want %v", got, want)
	}
	if r.Meta().Extra[timeline.HostsInEventsKey] != "1" {
		t.Errorf("Meta after reading lost the Meta chunk's pairs: %v", r.Meta().Extra)
	}
	// A stream reader (a recording piped in) keeps them in its Meta too.
	s, err := NewStreamReader("pipe", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
	}
	if m, _ := s.Meta(); timeline.HostNames(m)[1] != "node-b" {
		t.Errorf("the stream reader's Meta names %v; want host 1 node-b", timeline.HostNames(m))
	}
}

// A damaged HostNames payload is refused with what is wrong with it, as a CorruptionError naming
// the file and the chunk's offset.
func TestHostNamesDamage(t *testing.T) {
	good := appendHostNames(nil, []HostName{{Host: 1, Name: "node-b"}})
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty name", appendHostNames(nil, []HostName{{Host: 4, Name: ""}}), "host name 0: host 4 has an empty name"},
		{"count over the bytes", appendHostNames(nil, []HostName{{Host: 1, Name: "a"}})[:1], "host names do not fit"},
		{"huge host", append(appendUv(nil, 1, math.MaxInt32+1), 1, 'a'), "host 2147483648 is over 2147483647"},
		{"long name", appendHostNames(nil, []HostName{{Host: 0, Name: strings.Repeat("n", maxHostName+1)}}), "1025 bytes, over the 1024"},
		{"left over", append(bytes.Clone(good), 0), "1 bytes left after 1 host names"},
		{"cut", good[:len(good)-2], "string of 6 bytes in 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := namesChunkFile(tc.payload)
			_, err := ReadAll("names.xfr", data, Options{})
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != "names.xfr" || ce.Offset != headerSize || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "host-names chunk") {
				t.Errorf("ReadAll(%.40x) = %v; want a CorruptionError at offset %d of names.xfr: host-names chunk: …%s…", tc.payload, err, headerSize, tc.want)
			}
		})
	}
}

// namesChunkFile frames payload as a HostNames chunk, followed by a sound chunk: damage in it is
// mid-file, not a torn tail.
func namesChunkFile(payload []byte) []byte {
	return appendChunk(appendChunk(header(Version), ChunkHostNames, payload), ChunkDropped, appendUv(nil, 0))
}

// appendUv appends uvarints.
func appendUv(dst []byte, vs ...uint64) []byte {
	for _, v := range vs {
		dst = binary.AppendUvarint(dst, v)
	}
	return dst
}

// hostNamesFile is a recording whose HostNames chunk, between its events, names hosts 0 and 1.
func hostNamesFile(t testing.TB) []byte {
	evs, s := sample(40)
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{w.WriteMeta(Meta{Source: "attach"}), w.WriteStrings(1, s.All()[1:]), w.WriteEvents(evs[:20]),
		w.WriteHostNames([]HostName{{Host: 0, Name: "node-a"}, {Host: 1, Name: "node-b"}}), w.WriteEvents(evs[20:]), w.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// FuzzHostNames frames arbitrary bytes as a sound HostNames chunk: the reader must never panic,
// refuses damage as a CorruptionError, and what it reads re-encodes to the names it read.
func FuzzHostNames(f *testing.F) {
	f.Add(appendHostNames(nil, []HostName{{Host: 0, Name: "node-a"}, {Host: 1, Name: "xfertop-fake-host-1"}}))
	f.Add(appendHostNames(nil, nil))
	f.Add(appendUv(nil, 1<<40))
	f.Add(append(appendUv(nil, 1, math.MaxInt32+1), 1, 'a'))
	f.Fuzz(func(t *testing.T, payload []byte) {
		data := namesChunkFile(payload)
		rec, err := ReadAll("fuzz.xfr", data, Options{})
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != "fuzz.xfr" || ce.Offset != headerSize {
				t.Fatalf("error %v; want a CorruptionError naming fuzz.xfr at offset %d", err, headerSize)
			}
			return
		}
		names, err := decodeHostNames(payload)
		if err != nil {
			t.Fatalf("the reader took %x, decodeHostNames refuses it: %v", payload, err)
		}
		again, err := decodeHostNames(appendHostNames(nil, names))
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("names %v re-encode to %v (%v)", names, again, err)
		}
		got := timeline.HostNames(rec.Meta)
		for _, n := range names {
			if got[n.Host] == "" {
				t.Fatalf("Meta names %v; the chunk named host %d %q", got, n.Host, n.Name)
			}
		}
	})
}
