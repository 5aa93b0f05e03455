package analysis

import "slices"

// idleRows are the idle analysis's result rows, kept from one result to the next so that a result
// rebuilds only the rows of the streams that ran an op since the last one, and of their devices: a
// console asks for a result every frame, and behind a Collector a frame's spans reach a fraction of
// 4,096 devices' 8,192 streams (every row was rebuilt from every stream's state each time). A
// result hands out copies of the rows, so rows handed out are never written.
type idleRows struct {
	order   []streamKey   // the streams in result order: by device, then stream
	ordered []*streamGaps // the streams in the same order
	streams []StreamIdle  // each stream's row, by place in order
	devices []DeviceGaps  // each device's row: the sum of its streams'
	devOf   []int32       // by place in order: the stream's device row
	first   []int32       // by device row: its first stream's place (a device's streams are contiguous); last, len(order)
	dirty   []int32       // the places of the streams whose rows are stale (streamGaps.dirty)
	devMark []bool        // by device row: listed in devList (scratch of refresh)
	devList []int32
}

// rebuild puts the streams in result order and builds every row: when a stream was added.
func (r *idleRows) rebuild(streams map[streamKey]*streamGaps) {
	r.order = r.order[:0]
	for k := range streams {
		r.order = append(r.order, k)
	}
	slices.SortFunc(r.order, func(a, b streamKey) int {
		if a.dev != b.dev {
			return int(a.dev) - int(b.dev)
		}
		return int(int64(a.stream) - int64(b.stream))
	})
	r.ordered, r.streams, r.devOf, r.first = r.ordered[:0], r.streams[:0], r.devOf[:0], r.first[:0]
	for i, k := range r.order {
		st := streams[k]
		st.idx, st.dirty = int32(i), false
		r.ordered = append(r.ordered, st)
		r.streams = append(r.streams, st.result(k))
		if i == 0 || r.order[i-1].dev != k.dev {
			r.first = append(r.first, int32(i))
		}
		r.devOf = append(r.devOf, int32(len(r.first)-1))
	}
	ndev := len(r.first)
	r.first = append(r.first, int32(len(r.order)))
	r.devices = r.devices[:0]
	for j := range ndev {
		r.devices = append(r.devices, r.device(j))
	}
	r.dirty = r.dirty[:0]
	r.devMark = make([]bool, ndev)
}

// refresh rebuilds the rows of the streams that ran an op since the last result, and of their
// devices.
func (r *idleRows) refresh() {
	r.devList = r.devList[:0]
	for _, i := range r.dirty {
		st := r.ordered[i]
		r.streams[i], st.dirty = st.result(r.order[i]), false
		if j := r.devOf[i]; !r.devMark[j] {
			r.devMark[j] = true
			r.devList = append(r.devList, j)
		}
	}
	r.dirty = r.dirty[:0]
	for _, j := range r.devList {
		r.devices[j], r.devMark[j] = r.device(int(j)), false
	}
}

// device is device row j from its streams' rows.
func (r *idleRows) device(j int) DeviceGaps {
	var sums CauseNs
	for _, s := range r.streams[r.first[j]:r.first[j+1]] {
		for c := range sums {
			sums[c] += s.ByCause[c]
		}
	}
	return deviceGaps(r.order[r.first[j]].dev, &sums)
}
