package recordings

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"

	"github.com/xfertop/xfertop/timeline"
)

// HostName is a host's name as a source of the job gave it, learned after the recording's Meta
// chunk was written (a rank that joined a live job named its host): a HostNames chunk holds them
// (docs/recording-format.md, type 9).
type HostName struct {
	Host int32 // the number events carry in Host (≥ 0)
	Name string
}

// maxHostName bounds one name in a HostNames chunk: longer is damage (a host name is at most 255
// bytes in DNS; this leaves room for what a job calls its hosts).
const maxHostName = 1024

// appendHostNames encodes a HostNames payload: uvarint count, then per name uvarint host and the
// name (uvarint length, bytes).
func appendHostNames(dst []byte, names []HostName) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = binary.AppendUvarint(dst, uint64(n.Host))
		dst = appendString(dst, n.Name)
	}
	return dst
}

// decodeHostNames decodes a HostNames payload; damage is an error saying which name is bad.
func decodeHostNames(payload []byte) ([]HostName, error) {
	d := decoder{b: payload}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b))/2 {
		return nil, fmt.Errorf("%d host names do not fit in %d bytes", n, len(d.b))
	}
	out := make([]HostName, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		h := d.uvarint()
		name := d.str()
		switch {
		case d.err != nil:
		case h > math.MaxInt32:
			return nil, fmt.Errorf("host name %d: host %d is over %d", i, h, math.MaxInt32)
		case name == "":
			return nil, fmt.Errorf("host name %d: host %d has an empty name", i, h)
		case len(name) > maxHostName:
			return nil, fmt.Errorf("host name %d: host %d's name is %d bytes, over the %d a name may have", i, h, len(name), maxHostName)
		}
		out = append(out, HostName{Host: int32(h), Name: name})
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes left after %d host names", len(d.b), n)
	}
	return out, nil
}

// WriteHostNames writes a HostNames chunk: names learned after the Meta chunk was written. None
// writes nothing.
func (w *Writer) WriteHostNames(names []HostName) error {
	if len(names) == 0 {
		return nil
	}
	w.buf = appendHostNames(w.buf[:0], names)
	return w.write(ChunkHostNames, w.buf, 0, 0, 0)
}

// withHostNames returns m with names added to its description (timeline.HostNameKey), in a new
// Extra map: a Meta handed out earlier is left as it was.
func withHostNames(m Meta, names []HostName) Meta {
	m.Extra = maps.Clone(m.Extra)
	if m.Extra == nil {
		m.Extra = make(map[string]string, len(names))
	}
	for _, n := range names {
		m.Extra[timeline.HostNameKey(n.Host)] = n.Name
	}
	return m
}
