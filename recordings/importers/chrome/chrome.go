package chrome

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/xfertop/xfertop/timeline"
)

// Args carries an event's fields in an exported slice's args, so an export imports back exactly.
type Args struct {
	K      uint8
	S, E   int64
	Q, B   int64
	O      uint64
	D, P   int32
	St, G  uint32
	C, Ba  uint32
	L      []byte
	A      uint32
	H, R   uint16
	Sb, Su uint8
	Pr     int8
}

// Set stores field k of an exported slice's "xfertop" args.
func (x *Args) Set(k string, n int64) {
	switch k {
	case "k":
		x.K = uint8(n)
	case "s":
		x.S = n
	case "e":
		x.E = n
	case "q":
		x.Q = n
	case "b":
		x.B = n
	case "o":
		x.O = uint64(n)
	case "d":
		x.D = int32(n)
	case "p":
		x.P = int32(n)
	case "st":
		x.St = uint32(n)
	case "g":
		x.G = uint32(n)
	case "c":
		x.C = uint32(n)
	case "ba":
		x.Ba = uint32(n)
	case "a":
		x.A = uint32(n)
	case "h":
		x.H = uint16(n)
	case "r":
		x.R = uint16(n)
	case "sb":
		x.Sb = uint8(n)
	case "su":
		x.Su = uint8(n)
	case "pr":
		x.Pr = int8(n)
	}
}

// sessionPid is the Chrome process that holds events tied to no device (steps, marks, alerts).
const sessionPid = 1 << 20

func tid(dev int32, stream uint32) int64 {
	if dev < 0 {
		return int64(stream)
	}
	return int64(dev)<<20 | int64(stream)
}

func pid(e *timeline.Event) int64 {
	if e.Device < 0 {
		return sessionPid
	}
	return int64(e.Host)
}

// Write writes events as Chrome trace JSON: one process per host (and one for the session),
// one thread per device stream, copies, transfers and kernels as slices (async slices where ops
// overlap on one stream), send→recv flow arrows, and a bandwidth counter per device. meta is stored
// under "xfertopMetadata" so the file imports back with its description.
func Write(w io.Writer, events []timeline.Event, strs *timeline.Strings, meta map[string]string) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	b := make([]byte, 0, 4096)
	b = append(b, `{"displayTimeUnit":"ns","xfertopMetadata":{`...)
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, meta[k])
	}
	b = append(b, `},"traceEvents":[`...)
	first := true
	emit := func() error {
		if !first {
			if _, err := bw.WriteString(",\n"); err != nil {
				return err
			}
		}
		first = false
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	if _, err := bw.Write(b); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	b = b[:0]

	// Names for processes and threads.
	hosts := map[int64]bool{}
	threads := map[[2]int64]string{}
	for i := range events {
		e := &events[i]
		p := pid(e)
		hosts[p] = true
		k := [2]int64{p, tid(e.Device, e.Stream)}
		if _, ok := threads[k]; !ok {
			switch {
			case e.Device < 0:
				threads[k] = "session"
			case e.Stream == 0:
				threads[k] = fmt.Sprintf("device %d host thread", e.Device)
			default:
				threads[k] = fmt.Sprintf("device %d stream %d", e.Device, e.Stream)
			}
		}
	}
	hostIDs := make([]int64, 0, len(hosts))
	for h := range hosts {
		hostIDs = append(hostIDs, h)
	}
	sort.Slice(hostIDs, func(i, j int) bool { return hostIDs[i] < hostIDs[j] })
	for _, h := range hostIDs {
		name := fmt.Sprintf("host %d", h)
		if h == sessionPid {
			name = "session"
		}
		b = fmt.Appendf(b, `{"ph":"M","name":"process_name","pid":%d,"tid":0,"args":{"name":`, h)
		b = appendJSONString(b, name)
		b = append(b, "}}"...)
		if err := emit(); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	tkeys := make([][2]int64, 0, len(threads))
	for k := range threads {
		tkeys = append(tkeys, k)
	}
	sort.Slice(tkeys, func(i, j int) bool {
		if tkeys[i][0] != tkeys[j][0] {
			return tkeys[i][0] < tkeys[j][0]
		}
		return tkeys[i][1] < tkeys[j][1]
	})
	for _, k := range tkeys {
		b = fmt.Appendf(b, `{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":`, k[0], k[1])
		b = appendJSONString(b, threads[k])
		b = append(b, "}}"...)
		if err := emit(); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}

	// Slices: sync where they nest on their stream, async where they overlap without nesting.
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return events[order[i]].Start < events[order[j]].Start })
	lastEnd := map[[2]int64]int64{}
	asyncID := 0
	for _, i := range order {
		e := &events[i]
		name := e.Title(strs)
		p, t := pid(e), tid(e.Device, e.Stream)
		k := [2]int64{p, t}
		ph := "X"
		if e.End == e.Start {
			ph = "i"
		} else if end, ok := lastEnd[k]; ok && e.Start < end && e.End > end {
			ph = "b"
		}
		if ph == "X" {
			lastEnd[k] = max(lastEnd[k], e.End)
		}
		b = append(b, `{"ph":"`...)
		b = append(b, ph...)
		b = append(b, `","name":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"cat":"`...)
		b = append(b, e.Kind.String()...)
		b = fmt.Appendf(b, `","pid":%d,"tid":%d,"ts":`, p, t)
		b = appendMicros(b, e.Start)
		switch ph {
		case "X":
			b = append(b, `,"dur":`...)
			b = appendMicros(b, e.End-e.Start)
		case "i":
			b = append(b, `,"s":"t"`...)
		case "b":
			asyncID++
			b = fmt.Appendf(b, `,"id":%d`, asyncID)
		}
		b = append(b, `,"args":{`...)
		if e.Bytes != 0 {
			b = fmt.Appendf(b, `"bytes":%d,`, e.Bytes)
			if d := e.End - e.Start; d > 0 && e.Kind.IsComm() {
				b = append(b, `"GB/s":`...)
				b = strconv.AppendFloat(b, float64(e.Bytes)/float64(d), 'f', 3, 64)
				b = append(b, ',')
			}
		}
		b = appendXfr(b, e, strs)
		b = append(b, "}}"...)
		if err := emit(); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
		if ph == "b" {
			b = fmt.Appendf(b, `{"ph":"e","name":`)
			b = appendJSONString(b, name)
			b = fmt.Appendf(b, `,"cat":"%s","pid":%d,"tid":%d,"id":%d,"ts":`, e.Kind, p, t, asyncID)
			b = appendMicros(b, e.End)
			b = append(b, '}')
			if err := emit(); err != nil {
				return fmt.Errorf("write trace: %w", err)
			}
		}
		// A flow arrow from each send to its receive.
		if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv {
			fph := "s"
			if e.Kind == timeline.KindRecv {
				fph = "f"
			}
			b = fmt.Appendf(b, `{"ph":"%s","name":"transfer","cat":"flow","id":%d,"pid":%d,"tid":%d,"bp":"e","ts":`, fph, e.Op, p, t)
			b = appendMicros(b, e.Start)
			b = append(b, '}')
			if err := emit(); err != nil {
				return fmt.Errorf("write trace: %w", err)
			}
		}
	}
	if err := writeCounters(events, &b, emit); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if _, err := bw.WriteString("]}\n"); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// writeCounters emits, per device, a "GB/s" counter of the bytes moving at each moment.
func writeCounters(events []timeline.Event, b *[]byte, emit func() error) error {
	type change struct {
		t    int64
		rate float64
	}
	per := map[int32][]change{}
	hostOf := map[int32]uint16{}
	for i := range events {
		e := &events[i]
		if !e.Kind.IsComm() || e.Device < 0 || e.End <= e.Start || e.Bytes <= 0 || e.Kind == timeline.KindRecv {
			continue
		}
		r := float64(e.Bytes) / float64(e.End-e.Start)
		per[e.Device] = append(per[e.Device], change{e.Start, r}, change{e.End, -r})
		hostOf[e.Device] = e.Host
	}
	devs := make([]int32, 0, len(per))
	for d := range per {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i] < devs[j] })
	for _, d := range devs {
		cs := per[d]
		sort.Slice(cs, func(i, j int) bool { return cs[i].t < cs[j].t })
		rate := 0.0
		for i, c := range cs {
			rate += c.rate
			if i+1 < len(cs) && cs[i+1].t == c.t {
				continue
			}
			if rate < 1e-9 {
				rate = 0
			}
			*b = fmt.Appendf(*b, `{"ph":"C","name":"device %d GB/s","pid":%d,"ts":`, d, hostOf[d])
			*b = appendMicros(*b, c.t)
			*b = append(*b, `,"args":{"GB/s":`...)
			*b = strconv.AppendFloat(*b, rate, 'f', 3, 64)
			*b = append(*b, "}}"...)
			if err := emit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendXfr(b []byte, e *timeline.Event, strs *timeline.Strings) []byte {
	b = fmt.Appendf(b, `"xfertop":{"k":%d,"s":%d,"e":%d,"q":%d,"b":%d,"o":%d,"d":%d,"p":%d,"st":%d,"g":%d,"c":%d,"ba":%d,"l":`,
		e.Kind, e.Start, e.End, e.Queued, e.Bytes, e.Op, e.Device, e.Peer, e.Stream, e.Group, e.Comm, e.Barrier)
	b = appendJSONString(b, strs.Lookup(e.Label))
	return fmt.Appendf(b, `,"a":%d,"h":%d,"r":%d,"sb":%d,"su":%d,"pr":%d}`, e.Aux, e.Host, e.Ranks, e.Sub, e.Status, e.Priority)
}

// appendMicros writes ns as microseconds with nanosecond precision (Chrome's ts unit).
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	if r := ns % 1000; r != 0 {
		b = append(b, '.', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	}
	return b
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return append(b, '"')
}

// Event rebuilds an event written by Write from its args.
func (x *Args) Event(label uint32) timeline.Event {
	return timeline.Event{Kind: timeline.Kind(x.K), Start: x.S, End: x.E, Queued: x.Q, Bytes: x.B, Op: x.O, Device: x.D, Peer: x.P,
		Stream: x.St, Group: x.G, Comm: x.C, Barrier: x.Ba, Label: label, Aux: x.A, Host: x.H, Ranks: x.R,
		Sub: x.Sb, Status: x.Su, Priority: x.Pr}
}
