package inspector

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// recKey is what one operation of one rank is: a rank reports each sequence number of a
// communicator once (a p2p once per peer).
type recKey struct {
	comm uint32
	rank int32
	peer int32
	kind timeline.Kind
	sub  uint8
	sn   uint64
}

// dropRepeats leaves out the records that repeat an earlier one's communicator, rank and
// sequence number (a log appended twice, a writer repeating itself), keeping the first, with one
// warning that counts them and names the first. Held, each repeat would be one more part of an
// instance that is already complete. Prometheus series carry no sequence number and are kept.
func (st *state) dropRepeats() {
	seen := make(map[recKey]struct{}, len(st.recs))
	out := st.recs[:0]
	var n int
	var first recKey
	for _, r := range st.recs {
		if r.series {
			out = append(out, r)
			continue
		}
		k := recKey{r.comm, r.rank, r.peer, r.kind, r.sub, r.sn}
		if _, ok := seen[k]; ok {
			if n == 0 {
				first = k
			}
			n++
			continue
		}
		seen[k] = struct{}{}
		out = append(out, r)
	}
	st.recs = out
	if n > 0 {
		st.warn.add(fmt.Sprintf("%d %s repeat the communicator, rank and coll_sn of an earlier one (the first: communicator %s rank %d coll_sn %d): left out, the first of each kept (a log appended twice?)",
			n, plural(n, "record", "records"), st.comms[first.comm-1].id, first.rank, first.sn))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
