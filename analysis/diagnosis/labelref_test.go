package diagnosis

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xfertop/xfertop/timeline"
)

// labelTable resolves label ids by index; id 0 and ids past the end are "".
type labelTable []string

func (l labelTable) Lookup(id uint32) string {
	if int(id) < len(l) {
		return l[id]
	}
	return ""
}

// A send/receive's finding names it in a user's terms: its bytes, which rank sends to which, the
// streams of the halves whose events were seen, and its label, then its op id for `/op N`; what is
// not known is left out, not shown as 0 (a size) or made up (a direction no event says).
func TestP2PName(t *testing.T) {
	labels := labelTable{"", "stage 1→2 microbatch 3"}
	send := timeline.Event{Kind: timeline.KindSend, Device: 4, Peer: 8, Stream: 2, Op: 26, Comm: 2, Bytes: 64 << 20, Label: 1}
	recv := timeline.Event{Kind: timeline.KindRecv, Device: 8, Peer: 4, Stream: 3, Op: 26, Comm: 2, Bytes: 64 << 20, Label: 1}
	waitRecv := timeline.Event{Kind: timeline.KindPeerWait, Aux: timeline.PeerWaitRecv, Device: 8, Peer: 4, Stream: 3, Op: 26, Comm: 2, Bytes: 64 << 20}
	waitAny := timeline.Event{Kind: timeline.KindPeerWait, Device: 8, Peer: 4, Stream: 3, Op: 26, Comm: 2, Bytes: 1 << 10}
	unsized := timeline.Event{Kind: timeline.KindSend, Device: 4, Peer: 8, Stream: 2, Op: 26, Comm: 2}
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want string
	}{
		{"both halves", []timeline.Event{send, recv},
			`64 MiB from rank 4 (stream 2) to rank 8 (stream 3), "stage 1→2 microbatch 3" (send/recv op 26 on communicator 2)`},
		{"the receive first", []timeline.Event{recv, send},
			`64 MiB from rank 4 (stream 2) to rank 8 (stream 3), "stage 1→2 microbatch 3" (send/recv op 26 on communicator 2)`},
		// The label of the half that has one: a source may label one half only.
		{"a receive waiting, unlabelled, then its labelled send", []timeline.Event{waitRecv, send},
			`64 MiB from rank 4 (stream 2) to rank 8 (stream 3), "stage 1→2 microbatch 3" (send/recv op 26 on communicator 2)`},
		{"a receive waiting alone", []timeline.Event{waitRecv},
			`64 MiB from rank 4 to rank 8 (stream 3) (send/recv op 26 on communicator 2)`},
		{"a wait whose half is not known", []timeline.Event{waitAny},
			`transfer between ranks 4 and 8, 1 KiB (send/recv op 26 on communicator 2)`},
		{"size not known", []timeline.Event{unsized},
			`transfer from rank 4 (stream 2) to rank 8 (send/recv op 26 on communicator 2)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &hangGroup{first: &c.evs[0]}
			for i := range c.evs {
				g.noteP2P(&c.evs[i])
			}
			if got := resolveLabels(p2pName(g), labels); got != c.want {
				t.Errorf("p2pName = %q; want %q", got, c.want)
			}
		})
	}
}

// Label references resolve to the quoted label, or to nothing where the label is not known;
// nothing of the reference is left.
func TestResolveLabels(t *testing.T) {
	labels := labelTable{"", "exchange 0", `say "hi"`}
	for _, c := range []struct {
		in     string
		labels timeline.Labels
		want   string
	}{
		{"op 7" + labelRef(1) + " (x)", labels, `op 7, "exchange 0" (x)`},
		{"op 7" + labelRef(2), labels, `op 7, "say \"hi\""`},
		{"op 7" + labelRef(9) + " (x)", labels, "op 7 (x)"}, // not in the table
		{"op 7" + labelRef(1), nil, "op 7"},                 // no table given
		{"op 7" + labelRef(0), labels, "op 7"},              // no label: no reference
		{"a" + labelRef(1) + "; b" + labelRef(2), labels, `a, "exchange 0"; b, "say \"hi\""`},
		{"a\uE000x", labels, "ax"}, // a stray mark is dropped, not shown
		{"a\uE001x", labels, "ax"},
		{"a" + labelRef(1), labelTable{"", "\uE000\uE001"}, `a, "\ue000\ue001"`}, // a label's own marks are escaped
		{"plain", labels, "plain"},
	} {
		if got := resolveLabels(c.in, c.labels); got != c.want {
			t.Errorf("resolveLabels(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// FuzzResolveLabels: any text resolves without a panic; valid UTF-8 stays valid and keeps none of
// the reference's marks.
func FuzzResolveLabels(f *testing.F) {
	f.Add("op 7"+labelRef(1)+" (x)", "exchange 0")
	f.Add("\uE000\uE001\uE000", "")
	f.Add("\uE00012345678901234567890\uE001", "x")
	f.Fuzz(func(t *testing.T, s, label string) {
		got := resolveLabels(s, labelTable{"", label})
		if !utf8.ValidString(s) {
			return // the findings' texts are UTF-8: bytes that are not may join into a mark once one is cut out
		}
		if strings.ContainsRune(got, refOpen) || strings.ContainsRune(got, refClose) {
			t.Fatalf("resolveLabels(%q) = %q: a mark is left", s, got)
		}
		if utf8.ValidString(label) && !utf8.ValidString(got) {
			t.Fatalf("resolveLabels(%q) = %q: not valid UTF-8", s, got)
		}
	})
}
