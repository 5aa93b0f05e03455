package analysis

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// synthWorkload is a data-parallel training-like run: every device has a compute, a transfer and a
// communication stream; each step loads input over PCIe, runs kernels (with launch gaps, host waits
// and event waits), exchanges with ring neighbours (sends, receives, peer waits), all-reduces
// gradients across all ranks and now and then meets at a barrier; devices are sampled each step.
type synthWorkload struct {
	devices, gpusPerHost int
	kernels              int // per device per step
}

func (w synthWorkload) meta() timeline.Meta {
	return timeline.Meta{Source: "synthetic", Devices: w.devices, GPUsPerHost: w.gpusPerHost}
}

// events generates at least n events, in end order (producers emit an op when it completes).
func (w synthWorkload) events(seed uint64, n int, strs *timeline.Strings) []timeline.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	evs := make([]timeline.Event, 0, n+n/8)
	labels := []uint32{strs.ID("gemm"), strs.ID("layernorm"), strs.ID("softmax"), strs.ID("ncclDevKernel_AllReduce_Sum_f32")}
	alertMsg := strs.ID("send stuck past the watchdog")
	stream := func(dev int32, k uint32) uint32 { return uint32(dev)*4 + k }
	var op uint64
	var now int64
	for step := 0; len(evs) < n; step++ {
		stepStart := now
		var stepEnd int64
		op++
		arOp := op
		op++
		barOp := op
		for d := range int32(w.devices) {
			t := stepStart + r.Int64N(5*us)
			// Input over PCIe on the transfer stream.
			h2d := copyEv(timeline.CopyH2D, d, timeline.NoDevice, t, t+40*us+r.Int64N(20*us), 8<<20)
			h2d.Stream, h2d.Queued = stream(d, 2), t-2*us
			evs = append(evs, h2d)
			// Compute: the first kernel waits for the input copy (an event wait).
			ew := waitEv(timeline.KindEventWait, d, stream(d, 1), t, h2d.End)
			evs = append(evs, ew)
			ct := h2d.End
			for k := range w.kernels {
				gap := 2*us + r.Int64N(10*us)
				q := ct - r.Int64N(5*us)
				if r.IntN(8) == 0 {
					gap = 40*us + r.Int64N(100*us) // the host was late launching it
					q = ct + gap - us
				}
				s := ct + gap
				e := kern(d, stream(d, 1), s, s+20*us+r.Int64N(200*us))
				e.Queued, e.Label = q, labels[k%3]
				evs = append(evs, e)
				ct = e.End
			}
			// Ring exchange on the communication stream, overlapping the last kernels.
			cs := ct - 100*us
			next, prev := (d+1)%int32(w.devices), (d+int32(w.devices)-1)%int32(w.devices)
			pw := waitEv(timeline.KindPeerWait, d, stream(d, 3), cs, cs+r.Int64N(30*us)+1)
			evs = append(evs, pw)
			snd := sendEv(d, next, pw.End, pw.End+50*us+r.Int64N(50*us), 4<<20, op+uint64(d)+1)
			snd.Stream = stream(d, 3)
			rcv := recvEv(d, prev, snd.End+us, snd.End+us+50*us+r.Int64N(50*us), 4<<20, op+uint64(prev)+1)
			rcv.Stream = stream(d, 3)
			ar := collEv(timeline.CollAllReduce, w.devices, d, arOp, rcv.End+r.Int64N(20*us), 0, 64<<20)
			ar.End, ar.Stream, ar.Label = ar.Start+500*us+r.Int64N(100*us), stream(d, 3), labels[3]
			evs = append(evs, snd, rcv, ar)
			stepEnd = max(stepEnd, ar.End)
			for _, m := range []timeline.SampleMetric{timeline.SampleUtilization, timeline.SampleMemoryUsed, timeline.SampleNVLinkTx} {
				evs = append(evs, sample(d, m, stepStart, r.Int64N(100)))
			}
			hit := instant(timeline.KindCommHit, stepStart)
			hit.Device, hit.Comm = d, 1
			evs = append(evs, hit)
		}
		op += uint64(w.devices)
		if step%10 == 0 {
			for d := range int32(w.devices) {
				b := barrierEv(d, barOp, w.devices, stepEnd+r.Int64N(50*us), 0)
				b.Stream = stream(d, 1)
				evs = append(evs, b)
			}
			rel := stepEnd + 60*us
			for i := len(evs) - w.devices; i < len(evs); i++ {
				evs[i].End = rel
			}
			stepEnd = rel
		}
		if step == 0 {
			for d := range int32(w.devices) {
				evs = append(evs, commInitEv(1, d, stepStart, stepStart+r.Int64N(200*us)))
			}
		}
		if step%500 == 7 {
			a := instant(timeline.KindAlert, stepEnd)
			a.Status, a.Device, a.Peer, a.Label = timeline.StatusTimeout, 0, 1, alertMsg
			evs = append(evs, a)
		}
		g := instant(timeline.KindGroupLaunch, stepStart)
		g.Aux = 2
		evs = append(evs, g, stepEv(stepStart, stepEnd))
		now = stepEnd + 10*us
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
	return evs
}
