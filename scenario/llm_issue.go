package scenario

import (
	"fmt"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// llmItem is one entry of a stage's schedule: the forward or backward of microbatch micro.
type llmItem struct {
	fwd   bool
	micro int
}

// oneFOneB is stage s's 1F1B schedule over m microbatches in a pipeline of pp stages: pp−s−1
// warm-up forwards, then a forward and a backward in turn, then the backwards left.
func oneFOneB(pp, s, m int) []llmItem {
	w := min(pp-s-1, m)
	out := make([]llmItem, 0, 2*m)
	for i := range w {
		out = append(out, llmItem{true, i})
	}
	for k := range m - w {
		out = append(out, llmItem{true, w + k}, llmItem{false, k})
	}
	for k := m - w; k < m; k++ {
		out = append(out, llmItem{false, k})
	}
	return out
}

// llmStep is what one step's issue needs beside the phase.
type llmStep struct {
	c      *engine.Client
	ids    []uint64         // send/recv op ids, see id
	agDone []engine.EventID // [job rank × maxLayers + layer]: the layer's parameters are gathered
	grads  []engine.EventID // [job rank × maxLayers + layer]: the layer's gradients are complete
	maxL   int
}

func (ph *llmPhase) lanes() int { return ph.dp * ph.tp }

// id is the op id of the transfer across boundary b (stage b to b+1) of microbatch i, forward
// (dir 0) or backward (dir 1), in lane (dp rank, tp rank).
func (ph *llmPhase) id(st *llmStep, b, i, dir, lane int) uint64 {
	return st.ids[((b*ph.micro+i)*2+dir)*ph.lanes()+lane]
}

func (ph *llmPhase) streams(c *engine.Client) error {
	if ph.st.dp != nil {
		return nil
	}
	n := ph.pp * ph.lanes()
	for g := range n {
		d := engine.DeviceID(g)
		var err error
		mk := func(prio engine.Priority) engine.StreamID {
			var s engine.StreamID
			if err == nil {
				s, err = c.NewStream(d, prio)
			}
			return s
		}
		hi := c.Options().D2DPriority
		ph.st.fwdSend = append(ph.st.fwdSend, mk(hi))
		ph.st.fwdRecv = append(ph.st.fwdRecv, mk(hi))
		ph.st.bwdSend = append(ph.st.bwdSend, mk(hi))
		ph.st.bwdRecv = append(ph.st.bwdRecv, mk(hi))
		ph.st.dp = append(ph.st.dp, mk(engine.PriorityNormal))
		if err != nil {
			return err
		}
	}
	return nil
}

func (ph *llmPhase) issue(r *runner, _ int) error {
	c := r.c
	if err := ph.streams(c); err != nil {
		return err
	}
	st := &llmStep{c: c}
	for _, n := range ph.layers {
		st.maxL = max(st.maxL, n)
	}
	st.ids = make([]uint64, (ph.pp-1)*ph.micro*2*ph.lanes())
	for i := range st.ids {
		st.ids[i] = c.NewOpID()
	}
	jobRanks := ph.pp * ph.lanes()
	st.agDone = make([]engine.EventID, jobRanks*st.maxL)
	st.grads = make([]engine.EventID, jobRanks*st.maxL)
	if ph.dp > 1 && ph.zero {
		if err := ph.dpComm(st, true); err != nil {
			return err
		}
	}
	for s := range ph.pp {
		for _, it := range oneFOneB(ph.pp, s, ph.micro) {
			if err := ph.item(st, s, it); err != nil {
				return err
			}
		}
	}
	if ph.dp > 1 {
		return ph.dpComm(st, false)
	}
	return nil
}

// item issues one forward or backward of a microbatch on every GPU of stage s: receive its input
// from the neighbouring stage, run the stage's layers, send the output on.
func (ph *llmPhase) item(st *llmStep, s int, it llmItem) error {
	c := st.c
	from, to, dir, b := s-1, s+1, 0, s // forward: from s−1, to s+1 over boundary s
	recv, send := ph.st.fwdRecv, ph.st.fwdSend
	if !it.fwd {
		from, to, dir = s+1, s-1, 1
		recv, send = ph.st.bwdRecv, ph.st.bwdSend
	}
	lanes := ph.lanes()
	if from >= 0 && from < ph.pp {
		bIn := min(s, from) // boundary between s and from
		for lane := range lanes {
			g := s*lanes + lane
			d, peer := engine.DeviceID(g), engine.DeviceID(from*lanes+lane)
			if _, err := c.Recv(recv[g], peer, ph.shardBytes, ph.id(st, bIn, it.micro, dir, lane)); err != nil {
				return err
			}
			ev, _ := c.Record(recv[g])
			_ = c.WaitEvent(c.ComputeStream(d), ev)
		}
	}
	if err := ph.layersOf(st, s, it); err != nil {
		return err
	}
	if to >= 0 && to < ph.pp {
		if !it.fwd {
			b = to
		}
		for lane := range lanes {
			g := s*lanes + lane
			d, peer := engine.DeviceID(g), engine.DeviceID(to*lanes+lane)
			ev, _ := c.Record(c.ComputeStream(d))
			_ = c.WaitEvent(send[g], ev)
			if _, err := c.Send(send[g], peer, ph.shardBytes, ph.id(st, b, it.micro, dir, lane)); err != nil {
				return err
			}
		}
	}
	return nil
}

// layersOf runs stage s's layers for one item: in order forward, in reverse backward. The first
// microbatch's forward of a layer waits for its gathered parameters (dp_comm=zero); the last
// microbatch's backward of a layer records that its gradients are complete.
func (ph *llmPhase) layersOf(st *llmStep, s int, it llmItem) error {
	c, n, lanes := st.c, ph.layers[s], ph.lanes()
	for k := range n {
		l := k
		if !it.fwd {
			l = n - 1 - k
		}
		if it.fwd && it.micro == 0 {
			for lane := range lanes {
				g := s*lanes + lane
				_ = c.WaitEvent(c.ComputeStream(engine.DeviceID(g)), st.agDone[g*st.maxL+l])
			}
		}
		mult, dirName := int64(1), "fwd"
		if !it.fwd {
			mult, dirName = 2, "bwd"
		}
		if err := ph.tpBlock(c, s, ph.attnNs*mult, "attention "+dirName); err != nil {
			return err
		}
		var err error
		if ph.moe {
			err = ph.moeBlock(c, s, ph.mlpNs*mult, dirName)
		} else {
			err = ph.tpBlock(c, s, ph.mlpNs*mult, "mlp "+dirName)
		}
		if err != nil {
			return err
		}
		if !it.fwd && it.micro == ph.micro-1 && ph.dp > 1 {
			for lane := range lanes {
				g := s*lanes + lane
				st.grads[g*st.maxL+l], _ = c.Record(c.ComputeStream(engine.DeviceID(g)))
			}
		}
	}
	return nil
}

// tpBlock is one tensor-parallel block on every GPU of stage s: all-gather the input shards, the
// GEMMs, reduce-scatter the output (backward: the gradients, the same volumes), on the compute stream.
func (ph *llmPhase) tpBlock(c *engine.Client, s int, ns int64, label string) error {
	if err := ph.tpColl(c, s, timeline.CollAllGather); err != nil {
		return err
	}
	for g := s * ph.lanes(); g < (s+1)*ph.lanes(); g++ {
		if err := c.Kernel(c.ComputeStream(engine.DeviceID(g)), ns, label); err != nil {
			return err
		}
	}
	return ph.tpColl(c, s, timeline.CollReduceScatter)
}

func (ph *llmPhase) tpColl(c *engine.Client, s int, op timeline.CollOp) error {
	if ph.tp == 1 {
		return nil
	}
	label := "tp all-gather"
	if op == timeline.CollReduceScatter {
		label = "tp reduce-scatter"
	}
	devs := make([]engine.DeviceID, ph.tp)
	streams := make([]engine.StreamID, ph.tp)
	for r := range ph.dp {
		for t := range ph.tp {
			devs[t] = ph.dev(s, r, t)
			streams[t] = c.ComputeStream(devs[t])
		}
		if _, err := c.CollectiveOnAll(op, devs, streams, ph.actBytes, label); err != nil {
			return err
		}
	}
	return nil
}

// moeBlock is a mixture-of-experts MLP on every GPU of stage s: the tokens' all-to-all to their
// experts over each expert-parallel group, the experts, the all-to-all back.
func (ph *llmPhase) moeBlock(c *engine.Client, s int, ns int64, dirName string) error {
	if err := ph.epColl(c, s, "ep dispatch"); err != nil {
		return err
	}
	for g := s * ph.lanes(); g < (s+1)*ph.lanes(); g++ {
		if err := c.Kernel(c.ComputeStream(engine.DeviceID(g)), ns, "experts "+dirName); err != nil {
			return err
		}
	}
	return ph.epColl(c, s, "ep combine")
}

func (ph *llmPhase) epColl(c *engine.Client, s int, label string) error {
	if ph.ep == 1 {
		return nil
	}
	devs := make([]engine.DeviceID, ph.ep)
	streams := make([]engine.StreamID, ph.ep)
	for e := 0; e < ph.dp; e += ph.ep {
		for t := range ph.tp {
			for k := range ph.ep {
				devs[k] = ph.dev(s, e+k, t)
				streams[k] = c.ComputeStream(devs[k])
			}
			if _, err := c.CollectiveOnAll(timeline.CollAllToAll, devs, streams, ph.a2aBytes, label); err != nil {
				return err
			}
		}
	}
	return nil
}

// dpComm issues the data-parallel collectives of every layer on the data-parallel streams: at the
// step's start (start) the parameters' all-gathers, each recording when its layer may run; at its
// end each layer's gradient reduce-scatter (or all-reduce), waiting for the layer's gradients,
// last layer first as the backward produces them. Expert weights go over the dp/ep ranks that hold
// the same experts.
func (ph *llmPhase) dpComm(st *llmStep, start bool) error {
	op := timeline.CollReduceScatter
	switch {
	case start:
		op = timeline.CollAllGather
	case !ph.zero:
		op = timeline.CollAllReduce
	}
	for s := range ph.pp {
		n := ph.layers[s]
		for k := range n {
			l := n - 1 - k
			if start {
				l = k
			}
			if err := ph.dpGroups(st, s, l, op, start); err != nil {
				return err
			}
		}
	}
	return nil
}

// dpGroups issues op for layer l of stage s over every data-parallel group (and expert
// data-parallel group) of the stage.
func (ph *llmPhase) dpGroups(st *llmStep, s, l int, op timeline.CollOp, start bool) error {
	c := st.c
	what := "grads"
	if start {
		what = "params"
	}
	type group struct {
		first, stride, n int // dp ranks first, first+stride, …
		bytes            int64
		label            string
	}
	groups := []group{{0, 1, ph.dp, ph.denseGrad, fmt.Sprintf("dp %s stage %d layer %d", what, s, l)}}
	if ph.moe && ph.dp/ph.ep > 1 {
		for k := range ph.ep {
			groups = append(groups, group{k, ph.ep, ph.dp / ph.ep, ph.expertGrad, fmt.Sprintf("edp %s stage %d layer %d", what, s, l)})
		}
	}
	for _, gr := range groups {
		devs := make([]engine.DeviceID, gr.n)
		streams := make([]engine.StreamID, gr.n)
		for t := range ph.tp {
			for i := range gr.n {
				devs[i] = ph.dev(s, gr.first+i*gr.stride, t)
				streams[i] = ph.st.dp[devs[i]]
				if !start {
					_ = c.WaitEvent(streams[i], st.grads[int(devs[i])*st.maxL+l])
				}
			}
			if _, err := c.CollectiveOnAll(op, devs, streams, gr.bytes, gr.label); err != nil {
				return err
			}
			if start {
				for i := range gr.n {
					ev, _ := c.Record(streams[i])
					st.agDone[int(devs[i])*st.maxL+l] = ev
				}
			}
		}
	}
	return nil
}
