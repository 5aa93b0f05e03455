package ui

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// clusterSource is a finished synthetic job of gpus GPUs, 8 a host: each GPU runs two kernels in
// a 100 ms span, busy for a share that varies across the job (host 3 and every 97th GPU slow),
// and its NVLink and NIC carry traffic measured per 50 ms window, as the simulator reports it.
// It costs a few events a GPU, so a 4,096-GPU console is cheap to build in a test.
func clusterSource(t testing.TB, gpus int) *fakeSource {
	t.Helper()
	return clusterSourceWithout(t, gpus, -1)
}

// clusterSourceWithout is clusterSource in which GPU silent (where 0 or more) launched nothing, as
// a rank hung from the start: it has no event, while the job's layout counts it.
func clusterSourceWithout(t testing.TB, gpus, silent int) *fakeSource {
	t.Helper()
	const span = 100_000_000
	meta := timeline.Meta{Source: "sim", Scenario: "synthetic", Backend: "sim", Topology: fmt.Sprintf("h100x8x%d", gpus/8),
		Devices: gpus, GPUsPerHost: 8, LinkBytes: true,
		LinkPeaks: [timeline.NumPeaks]float64{timeline.PeakPCIe: 64e9, timeline.PeakNVLink: 450e9, timeline.PeakNIC: 50e9, timeline.PeakHBM: 3.35e12}}
	strs := timeline.NewStrings()
	var evs []timeline.Event
	for d := range gpus {
		if d == silent {
			continue
		}
		busy := 0.95 - 0.5*float64((d*37)%101)/101
		if d/8 == 3 || d%97 == 5 {
			busy = 0.1
		}
		a := int64(busy * span / 2)
		k := timeline.Event{Kind: timeline.KindKernel, Device: int32(d), Peer: -1, Host: uint16(d / 8), Stream: 1, Queued: -1}
		k1, k2 := k, k
		k1.Start, k1.End = 0, a
		k2.Start, k2.End = span-a, span
		evs = append(evs, k1, k2)
		for w := range int64(2) {
			for _, l := range []struct {
				link int
				pct  float64
			}{{timeline.PeakNVLink, busy * 0.9}, {timeline.PeakNIC, 1 - busy}} {
				lb := timeline.Event{Kind: timeline.KindLinkBytes, Device: int32(d), Peer: -1, Host: uint16(d / 8),
					Start: w * timeline.LinkWindowNs, End: (w + 1) * timeline.LinkWindowNs, Sub: timeline.PackLink(l.link, timeline.LinkTx),
					Bytes: int64(l.pct * meta.LinkPeaks[l.link] * 0.05), Queued: -1}
				evs = append(evs, lb)
			}
		}
	}
	slices.SortStableFunc(evs, func(a, b timeline.Event) int { return cmp.Compare(a.End, b.End) })
	win := timeline.NewWindow(1<<22, strs)
	for i := range evs {
		win.Emit(&evs[i])
	}
	return &fakeSource{win: win, info: SourceInfo{Name: "synthetic", Meta: meta}, status: Status{Speed: 1, Done: true}}
}
