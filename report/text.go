package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Text writes the report for people: one section per topic, numbers with units.
func Text(w io.Writer, r *Report) error {
	var b strings.Builder
	title := r.Source
	if r.Scenario != "" {
		title = r.Scenario + " on " + r.Source
	}
	fmt.Fprintf(&b, "xfertop report: %s\n", title)
	fmt.Fprintf(&b, "backend %s, topology %s (%d devices), seed %d, %s, %d events", r.Backend, r.Topology, r.Devices, r.Seed, Dur(r.DurationNs), r.Events)
	if r.DroppedEvents > 0 {
		fmt.Fprintf(&b, ", %d DROPPED", r.DroppedEvents)
	}
	b.WriteString("\n")
	if len(r.Knobs) > 0 {
		keys := make([]string, 0, len(r.Knobs))
		for k := range r.Knobs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+r.Knobs[k])
		}
		fmt.Fprintf(&b, "knobs: %s\n", strings.Join(kv, " "))
	}
	if r.Mapping != "" {
		fmt.Fprintf(&b, "placement: %s\n", r.Mapping)
	}
	if r.Ended != "" {
		fmt.Fprintf(&b, "run ended early: %s\n", r.Ended)
	}
	if r.Steps.Count > 0 {
		fmt.Fprintf(&b, "\nSteps: %d, mean %s, p50 %s, p99 %s\n", r.Steps.Count, Dur(r.Steps.MeanNs), Dur(r.Steps.P50Ns), Dur(r.Steps.P99Ns))
	}

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(&b, "\nTransfers: %d, %s\n", r.Transfers.Count, Bytes(r.Transfers.Bytes))
	fmt.Fprintln(tw, "kind\tcount\tbytes\tGB/s p50\t")
	for _, k := range TransferKinds {
		ks := r.Transfers.ByKind[k]
		if ks.Count == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t\n", k, ks.Count, Bytes(ks.Bytes), ks.GBpsP50)
	}
	tw.Flush()

	if len(r.Collectives) > 0 {
		b.WriteString("\nCollectives (nccl-tests algbw/busbw):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "op\tranks\tbytes\tcount\ttime p50\talgbw GB/s\tbusbw GB/s\t")
		for _, c := range r.Collectives {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%.2f\t%.2f\t\n", c.Op, c.Ranks, Bytes(c.Bytes), c.Count, Dur(c.TimeNsP50), c.AlgBW, c.BusBW)
		}
		tw.Flush()
	}

	cc := r.CommCache
	fmt.Fprintf(&b, "\nCommunicator cache: %d hits, %d misses, %d evictions, %s creating communicators\n",
		cc.Hits, cc.Misses, cc.Evictions, Dur(cc.InitNsTotal))
	fmt.Fprintf(&b, "Groups: %d launches fusing %d ops\n", r.Groups.Launches, r.Groups.Ops)

	if r.Barriers.Count > 0 {
		fmt.Fprintf(&b, "\nBarriers: %d, total wait %s, longest wait %s\n", r.Barriers.Count, Dur(r.Barriers.WaitNs), Dur(r.Barriers.MaxWaitNs))
		for i, s := range r.Barriers.Stragglers {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "  rank %d arrived last %d times, %s after the median (p50)\n", s.Rank, s.TimesLast, Dur(s.LatenessNs50))
		}
	}

	fmt.Fprintf(&b, "\nIdle time on streams: %s\n", Dur(r.Idle.TotalNs))
	for _, c := range []string{"host_wait", "kernel_wait", "event_wait", "barrier_wait", "peer_wait", "other"} {
		v := r.Idle.ByCause[c]
		if v == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %-13s %10s  %5.1f%%\n", c, Dur(v), 100*float64(v)/float64(max(r.Idle.TotalNs, 1)))
	}
	if len(r.Idle.Devices) > 0 {
		b.WriteString("Devices (share of each device's span):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tidle\tidle %\tcompute %\tnon-compute %\t")
		for _, d := range r.Idle.Devices {
			fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.1f\t\n", d.Device, Dur(d.IdleNs), d.IdlePct, d.ComputePct, d.NonCompPct)
		}
		tw.Flush()
	}
	if len(r.Idle.TopGaps) > 0 {
		b.WriteString("Largest gaps:\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tstream\tat\tlength\tcause\t")
		for _, g := range r.Idle.TopGaps {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t\n", g.Device, g.Stream, Dur(g.StartNs), Dur(g.DurNs), g.Cause)
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\nCommunication overlapped with compute: %.1f%%\n", r.Overlap.CommComputePct)

	if len(r.Telemetry) > 0 {
		b.WriteString("\nDevice telemetry (NVML, mean / max):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tsamples\tutil %\tPCIe rx GB/s\tPCIe tx GB/s\tpower W\ttemp °C\t")
		for _, t := range r.Telemetry {
			m := t.Metrics
			fmt.Fprintf(tw, "%d\t%d\t%.0f / %d\t%.1f / %.1f\t%.1f / %.1f\t%.0f / %.0f\t%.0f / %d\t\n", t.Device, t.Samples,
				m["utilization_pct"].Mean, m["utilization_pct"].Max, m["pcie_rx_bytes_per_s"].Mean/1e9, float64(m["pcie_rx_bytes_per_s"].Max)/1e9,
				m["pcie_tx_bytes_per_s"].Mean/1e9, float64(m["pcie_tx_bytes_per_s"].Max)/1e9, m["power_milliwatts"].Mean/1e3,
				float64(m["power_milliwatts"].Max)/1e3, m["temperature_c"].Mean, m["temperature_c"].Max)
		}
		tw.Flush()
	}
	if x := r.Export; x != nil {
		fmt.Fprintf(&b, "\nOpenTelemetry export to %s (%s): %s; %d spans built, %d exported, %d dropped; %d events dropped before export\n",
			x.Endpoint, x.Protocol, x.State, x.SpansBuilt, x.SpansExported, x.SpansDropped, x.EventsDropped)
	}
	if len(r.Alerts) > 0 {
		fmt.Fprintf(&b, "\nALERTS (%d):\n", len(r.Alerts))
		for _, a := range r.Alerts {
			fmt.Fprintf(&b, "  [%s] %s\n", a.Kind, a.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Dur formats nanoseconds with a unit that keeps three significant figures.
func Dur(ns int64) string {
	f := float64(ns)
	switch {
	case ns == 0:
		return "0"
	case ns < 1_000 && ns > -1_000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1_000_000 && ns > -1_000_000:
		return fmt.Sprintf("%.3gµs", f/1e3)
	case ns < 1_000_000_000 && ns > -1_000_000_000:
		return fmt.Sprintf("%.4gms", f/1e6)
	}
	return fmt.Sprintf("%.4gs", f/1e9)
}

// Bytes formats a byte count with binary units.
func Bytes(n int64) string {
	f := float64(n)
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.4gKiB", f/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.4gMiB", f/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.4gGiB", f/(1<<30))
	}
	return fmt.Sprintf("%.4gTiB", f/(1<<40))
}
