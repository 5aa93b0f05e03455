package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/units"
)

// Text writes the report for people with the default options.
func Text(w io.Writer, r *Report) error { return TextWith(w, r, TextOptions{}) }

// TextWith writes the report for people: one section per topic, numbers in the units a person
// reads, every percentage with its denominator; per-device tables of more than SummariseAbove
// devices as their distribution and the worst devices, unless o asks for every row.
func TextWith(w io.Writer, r *Report, o TextOptions) error {
	var b strings.Builder
	header(&b, r)
	if r.Steps.Count > 0 {
		fmt.Fprintf(&b, "\nSteps: %d, mean %s, p50 %s, p99 %s", r.Steps.Count, units.DurP(r.Steps.MeanNs), units.DurP(r.Steps.P50Ns), units.DurP(r.Steps.P99Ns))
		if s := r.Steps.SetupNs; s != nil && *s > 0 {
			fmt.Fprintf(&b, " (plus %s of communicator setup in the first step)", units.Dur(*s))
		}
		b.WriteString("\n")
	}
	if r.Steps.Count == 0 && r.StepsFrom == "" && r.Ended != "" {
		// Every other run has a Steps line: a reader of a hang's report sees at once that none ended.
		b.WriteString("\nSteps: none completed (the run ended early, before its first step ended: see below)\n")
	}
	switch {
	case r.StepsFrom == "":
	case r.Steps.Count > 0: // steps the input did not mark: how they were inferred
		fmt.Fprintf(&b, "Steps: %s\n", r.StepsFrom)
	default: // why none were: the count is the JSON's, 0
		fmt.Fprintf(&b, "\nSteps: 0 (%s)\n", r.StepsFrom)
	}
	criticalText(&b, r.CriticalPath)
	transfersText(&b, r)
	collectivesText(&b, r)
	if cc := r.CommCache; cc.Known {
		fmt.Fprintf(&b, "\nCommunicator cache: %s, %s, %s, %s creating communicators\n",
			units.Counted(cc.Hits, "hit"), units.Counted(cc.Misses, "miss"), units.Counted(cc.Evictions, "eviction"), units.Dur(cc.InitNsTotal))
	} else {
		fmt.Fprintf(&b, "\nCommunicator cache: %s (the source does not record communicators)\n", units.Unknown)
	}
	if g := r.Groups; g.Known {
		fmt.Fprintf(&b, "Groups: %s fusing %s\n", units.Counted(g.Launches, "launch"), units.Counted(g.Ops, "op"))
	} else {
		fmt.Fprintf(&b, "Groups: %s (the source does not record group launches)\n", units.Unknown)
	}
	if r.Barriers.Count > 0 {
		fmt.Fprintf(&b, "\nBarriers: %d, total wait %s, longest wait %s\n", r.Barriers.Count, units.Dur(r.Barriers.WaitNs), units.Dur(r.Barriers.MaxWaitNs))
		for i, s := range r.Barriers.Stragglers {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "  rank %d arrived last %s, %s after the median (p50)\n", s.Rank, units.Counted(s.TimesLast, "time"), units.DurP(s.LatenessNs50))
		}
		if len(r.Barriers.Stragglers) == 0 {
			b.WriteString("  no straggler: no rank ever arrived after all the others and after the median\n")
		}
	}
	idleText(&b, r, o)
	linksText(&b, r, o)
	telemetryText(&b, r, o)
	profilerCostText(&b, r)
	if x := r.Export; x != nil {
		fmt.Fprintf(&b, "\nOpenTelemetry export to %s (%s): %s; %s built, %d exported, %d dropped; %s dropped before export; %s built, %d exported, %d dropped\n",
			x.Endpoint, x.Protocol, x.State, units.Counted(x.SpansBuilt, "span"), x.SpansExported, x.SpansDropped, units.Counted(x.EventsDropped, "event"),
			units.Counted(x.MetricPoints, "metric point"), x.MetricPointsExported, x.MetricPointsDropped)
		if x.SpansDropped > 0 && x.DropReason != "" && x.DropReason != strings.TrimPrefix(x.State, "failing: ") {
			fmt.Fprintf(&b, "  spans last dropped because: %s\n", x.DropReason)
		}
		if s := exportSkipped(x); s != "" {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	receiveText(&b, r)
	findingsText(&b, r)
	if r.AlertCount > 0 {
		fmt.Fprintf(&b, "\nALERTS (%d):\n", r.AlertCount)
		for _, a := range r.Alerts {
			fmt.Fprintf(&b, "  [%s] %s (at %s)\n", a.Kind, a.Message, units.Dur(a.At))
			if a.Root != nil {
				fmt.Fprintf(&b, "      %s\n", a.Root)
			}
		}
		if n := r.AlertCount - int64(len(r.Alerts)); n > 0 {
			fmt.Fprintf(&b, "  … and %d more\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// exportSkipped says how many steps the export skipped whole, and what skipped them: "2 of 3
// steps skipped, not exported: 2 by the span budget (--otlp-max-rate 10000/s)"; "" when none.
// "ok … 0 dropped" alone reads as every step sent.
func exportSkipped(x *Export) string {
	if x.StepsSkipped <= 0 {
		return ""
	}
	var why []string
	if x.StepsOverRate > 0 {
		why = append(why, fmt.Sprintf("%d by the span budget (--otlp-max-rate %g/s)", x.StepsOverRate, x.MaxRate))
	}
	if n := x.StepsSkipped - x.StepsOverRate; n > 0 {
		why = append(why, fmt.Sprintf("%d by the sampling ratio (--otlp-sample %g)", n, x.SampleRatio))
	}
	return fmt.Sprintf("%d of %s skipped, not exported: %s", x.StepsSkipped, units.Counted(x.StepsSkipped+x.StepsExported, "step"), strings.Join(why, ", "))
}

func header(b *strings.Builder, r *Report) {
	title := r.Source
	if r.Scenario != "" {
		title = r.Scenario + " on " + r.Source
	}
	fmt.Fprintf(b, "xfertop report: %s\n", title)
	seed := units.Unknown
	if r.Seed != nil {
		seed = fmt.Sprint(*r.Seed)
	}
	span := units.Dur(r.DurationNs)
	if r.OpsUnknown != "" {
		span = "span " + units.Unknown
	}
	fmt.Fprintf(b, "backend %s, topology %s (%s), seed %s, %s, %s", orUnknown(r.Backend), orUnknown(r.Topology), units.Counted(r.Devices, "device"), seed, span,
		units.Counted(r.Events, "event"))
	if r.DroppedEvents > 0 {
		fmt.Fprintf(b, ", %d DROPPED", r.DroppedEvents)
	}
	b.WriteString("\n")
	if len(r.Knobs) > 0 {
		keys := make([]string, 0, len(r.Knobs))
		for k := range r.Knobs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, 0, len(keys))
		for _, k := range keys {
			kv = append(kv, k+"="+r.Knobs[k])
		}
		fmt.Fprintf(b, "knobs: %s\n", strings.Join(kv, " "))
	}
	if r.Mapping != "" {
		fmt.Fprintf(b, "placement: %s\n", r.Mapping)
	}
	if len(r.Faults) > 0 {
		fmt.Fprintf(b, "faults injected: %s\n", strings.Join(r.Faults, "; "))
	}
	if r.Ended != "" {
		fmt.Fprintf(b, "run ended early: %s\n", r.Ended)
		if root := r.EndedRoot(); root != nil {
			fmt.Fprintf(b, "  %s\n", root)
		}
	}
}

func transfersText(b *strings.Builder, r *Report) {
	if r.OpsUnknown != "" {
		fmt.Fprintf(b, "\nTransfers: %s (%s)\n", units.Unknown, r.OpsUnknown)
		return
	}
	t := r.Transfers
	payload := units.Bytes(t.Bytes) + " payload"
	switch {
	case t.UnknownSize > 0 && t.UnknownSize == t.Count:
		payload = fmt.Sprintf("%s payload, every one of unknown size", units.Unknown)
	case t.UnknownSize > 0:
		payload = fmt.Sprintf("≥ %s, %d of them of unknown size", payload, t.UnknownSize)
	}
	fmt.Fprintf(b, "\nTransfers: %d, %s (copies and sends, each once)\n", t.Count, payload)
	if !slices.ContainsFunc(timeline.TransferKinds, func(k string) bool { return t.ByKind[k].Count > 0 }) {
		return // no row: no table
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tsize ≤\tcount\tpayload\ttime p50\ttime p99\tGB/s\t")
	quantised, unknown := false, false
	var untimed int64
	for _, k := range timeline.TransferKinds {
		ks := t.ByKind[k]
		if ks.Count == 0 {
			continue
		}
		untimed += ks.UnknownTime
		quantised = quantised || ks.GBpsMin != nil
		unknown = unknown || ks.UnknownSize > 0
		for _, s := range t.BySize {
			quantised = quantised || s.Kind == k && s.GBpsMin != nil
		}
		fmt.Fprintf(tw, "%s\tall\t%d\t%s\t%s\t%s\t%s\t\n", k, ks.Count, statsBytes(ks), units.DurP(ks.P50Ns), units.DurP(ks.P99Ns), statsGBps(ks))
		for _, s := range t.BySize {
			if s.Kind == k && s.Count < ks.Count {
				size := units.Unknown // class 0: the ops of unknown size
				if s.SizeClass > 0 {
					size = units.Bytes(s.SizeClass)
				}
				fmt.Fprintf(tw, "\t%s\t%d\t%s\t%s\t%s\t%s\t\n", size, s.Count, statsBytes(s.Stats), units.DurP(s.P50Ns), units.DurP(s.P99Ns), statsGBps(s.Stats))
			}
		}
	}
	tw.Flush()
	b.WriteString("GB/s is payload-weighted: total payload / total time of the ops in the row.\n")
	if unknown {
		b.WriteString("Ops of unknown size (" + units.Unknown + ": the source did not record it, or its value was out of range) are left out of GB/s; a payload with ≥ holds only the known sizes.\n")
	}
	if quantised {
		b.WriteString("A range (lo–hi, or ≥ lo) is a rate the timestamps' resolution leaves uncertain: the ops lasted under 100 ticks of it on average.\n")
	}
	if untimed > 0 {
		fmt.Fprintf(b, "%s of unknown time (the source recorded no duration) counted, but left out of the times and GB/s (%s where no op of a row has one).\n",
			units.Counted(untimed, "op", "ops"), units.Unknown)
	}
	emulatedTransfersText(b, t)
}

// emulatedTransfersText says, under the transfers table, which rows hold transfers that stood in
// for the topology's (--fit on shared GPUs), what they were, and that GB/s leaves them out.
func emulatedTransfersText(b *strings.Builder, t analysis.Transfers) {
	for _, k := range timeline.TransferKinds {
		ks := t.ByKind[k]
		if ks.Emulated == 0 {
			continue
		}
		what := "carried by copies on this machine's GPUs (in one GPU's memory where both ranks share it), on no link of the topology"
		if ks.EmulatedGBps != nil {
			what = fmt.Sprintf("carried by copies on this machine's GPUs at %s GB/s (in one GPU's memory where both ranks share it), on no link of the topology",
				units.GBpsFigure(*ks.EmulatedGBps))
		}
		if k == "recv" {
			what = "each its stream's wait on the GPU for its send's copy to land, from the copy's start (the wait for the sender before it is a peer wait): no rate of its own"
		}
		fmt.Fprintf(b, "%s: %d of %d emulated (--fit put ranks on shared GPUs, where NCCL allows one rank per GPU), %s; GB/s leaves them out\n",
			k, ks.Emulated, ks.Count, what)
	}
}

// MovedBytes is the bytes moved on links as text: a lower bound (≥) when some op of unknown size
// moved bytes too, unknown when none of known size did.
func MovedBytes(l analysis.Links) string {
	switch {
	case !l.MovedLowerBound:
		return units.Bytes(l.MovedBytes)
	case l.MovedBytes == 0:
		return units.Unknown
	}
	return "≥ " + units.Bytes(l.MovedBytes)
}

// statsBytes is a group's payload: unknown when no op's size is known, a lower bound when some
// op's is not.
func statsBytes(s analysis.Stats) string {
	switch {
	case !s.BytesKnown():
		return units.Unknown
	case s.UnknownSize > 0:
		return "≥ " + units.Bytes(s.Bytes)
	}
	return units.Bytes(s.Bytes)
}

// statsGBps is a group's rate, or its bounds when the timestamps' resolution leaves it uncertain.
func statsGBps(s analysis.Stats) string {
	if s.GBpsMin == nil {
		return gbps(s.GBps)
	}
	return units.GBpsBounds(s.GBpsMin, s.GBpsMax)
}

func collectivesText(b *strings.Builder, r *Report) {
	if len(r.Collectives) == 0 && len(r.CollPartial) == 0 {
		if r.CollIncomplete > 0 { // no instance complete: what is known is that some were not
			fmt.Fprintf(b, "\nCollectives: none complete; %s never heard from every rank (not counted)\n", units.Counted(r.CollIncomplete, "collective"))
		}
		return
	}
	b.WriteString("\nCollectives (nccl-tests algbw/busbw, per instance: last rank end − first rank start):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tranks\tpayload\tcount\ttime p50\talgbw GB/s\tbusbw GB/s\talgo_proto\tch\t")
	for _, c := range r.Collectives {
		collectiveLine(tw, c)
	}
	for _, c := range r.CollPartial {
		collectiveLine(tw, c)
	}
	tw.Flush()
	var untimed int64
	for _, c := range slices.Concat(r.Collectives, r.CollPartial) {
		untimed += c.UnknownTime
	}
	if untimed > 0 {
		fmt.Fprintf(b, "%s of unknown time (a rank's part recorded no duration) counted, but left out of the times, bandwidths and stragglers (%s where no instance of a row has one).\n",
			units.Counted(untimed, "instance", "instances"), units.Unknown)
	}
	if slices.ContainsFunc(r.Collectives, func(c analysis.Collective) bool { return c.Emulated }) {
		b.WriteString("emulated: --fit put some of the collective's ranks on one GPU (NCCL allows one rank per GPU): NCCL ran it over the GPUs they share, the other ranks there waiting for it, and over one GPU not at all (no data moved); its time is what ran, with no algbw or busbw\n")
	}
	switch {
	case len(r.CollPartial) > 0:
		fmt.Fprintf(b, "%s never heard from every rank: the rows whose ranks read seen/expected, with the figures of the ranks seen (time ≥, bandwidths ≤ every rank's)\n",
			units.Counted(r.CollIncomplete, "collective"))
		if un := unrecordedText(r.CollPartial); un != "" {
			b.WriteString("  " + un + "\n")
		}
	case r.CollIncomplete > 0:
		fmt.Fprintf(b, "%s never heard from every rank (not counted)\n", units.Counted(r.CollIncomplete, "collective"))
	}
	for i, s := range r.CollStragglers {
		if i == 3 {
			break
		}
		partial := ""
		if s.TimesLastPartial > 0 {
			partial = fmt.Sprintf(" (%d of them last of the ranks seen)", s.TimesLastPartial)
		}
		fmt.Fprintf(b, "  rank %d started last at %s%s, %s after the median rank (p50)\n", s.Rank, units.Counted(s.TimesLast, "collective"), partial,
			units.DurP(s.LatenessNs50))
	}
	if len(r.CollStragglers) == 0 && (multiRank(r.Collectives) || multiRank(r.CollPartial)) {
		b.WriteString("  no straggler: no rank ever started a collective after all the others and after the median rank\n")
	}
}

// collectiveLine writes a row of the collectives table: a partial row's ranks as those seen of
// those expected ("1/2", or "1–3/4" when its instances differ), and its figures, of the ranks
// seen, as bounds: its time at least, its bandwidths at most.
func collectiveLine(tw io.Writer, c analysis.Collective) {
	size, ranks := units.Unknown, units.Unknown // 0: not recorded (analysis.Collective)
	if c.Bytes > 0 {
		size = units.Bytes(c.Bytes)
	}
	if c.Ranks > 0 {
		ranks = fmt.Sprint(c.Ranks)
	}
	p50, alg, bus := units.DurP(c.P50Ns), gbps(c.AlgBW), gbps(c.BusBW)
	if s := c.RanksSeen; s != nil {
		seen := fmt.Sprint(s[0])
		if s[1] != s[0] {
			seen = fmt.Sprintf("%d–%d", s[0], s[1])
		}
		ranks = seen + "/" + ranks
		p50, alg, bus = units.Bound("≥", p50), units.Bound("≤", alg), units.Bound("≤", bus)
	}
	ap, ch := c.AlgoProto, units.Unknown
	switch {
	case c.Emulated:
		ap = "emulated"
	case ap == "":
		ap = units.Unknown
	}
	if c.Channels != nil {
		ch = fmt.Sprint(*c.Channels)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", c.Op, ranks, size, c.Count, p50, alg, bus, ap, ch)
}

// unrecordedText names the ranks the partial rows' communicators hold that left no record at all
// (a Flight Recorder dump missing or left out); "" when none did.
func unrecordedText(rows []analysis.Collective) string {
	ranks, n := analysis.UnrecordedRanks(rows)
	if len(ranks) == 0 {
		return ""
	}
	names := make([]string, len(ranks))
	for i, r := range ranks {
		names[i] = fmt.Sprint(r)
	}
	list := strings.Join(names, ", ")
	if n > len(ranks) {
		list += fmt.Sprintf(" … (%d in all)", n)
	}
	return fmt.Sprintf("no record of %s %s (no dump, or one left out): not in these figures; what %s did is unknown, and %s be the one the others waited for",
		units.Plural(n, "rank"), list, units.Plural(n, "it", "they"), units.Plural(n, "it may", "one may"))
}

// multiRank says whether a collective spanned two ranks or more: only those can have a straggler.
func multiRank(cs []analysis.Collective) bool {
	for _, c := range cs {
		if c.Ranks > 1 {
			return true
		}
	}
	return false
}

func gbps(p *float64) string {
	if p == nil {
		return units.Unknown
	}
	return units.GBpsFigure(*p)
}

func pctOf(a, total int64) string {
	if total <= 0 {
		return units.Unknown
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(total))
}

func idleText(b *strings.Builder, r *Report, o TextOptions) {
	if r.Idle.Unknown != "" {
		idleUnknownText(b, r, o)
		return
	}
	fmt.Fprintf(b, "\nIdle: %s of device time (Σ over devices of the time none of its ops ran)\n", units.Dur(r.Idle.TotalNs))
	if in := r.Idle.InSteps; in != nil && r.Steps.Count > 0 {
		gaps, perStep := units.Dur(in.StreamNs), units.Dur(in.StreamNs/r.Steps.Count)
		if in.StreamErrorNs > 0 {
			// Too many gaps to hold each: summed in time bins, split where a step's edge crosses one.
			gaps = fmt.Sprintf("≈%s (± %s)", gaps, units.Dur(in.StreamErrorNs))
			perStep = "≈" + perStep
		}
		fmt.Fprintf(b, "  inside the steps: %s of device time, %s of stream gaps; per step %s and %s (the first step's setup and the time outside steps left out)\n",
			units.Dur(in.DeviceNs), gaps, units.Dur(in.DeviceNs/r.Steps.Count), perStep)
	}
	fmt.Fprintf(b, "Gaps between ops on streams: %s (Σ over streams), by cause (%% of that):\n", units.Dur(r.Idle.StreamNs))
	for _, c := range analysis.Causes() {
		v := r.Idle.ByCause[c.String()]
		if v == 0 {
			continue
		}
		fmt.Fprintf(b, "  %-13s %10s  %6s\n", c, units.Dur(v), pctOf(v, r.Idle.StreamNs))
	}
	if len(r.Idle.Devices) > 0 {
		idleDevicesText(b, r, o)
	}
	if len(r.Idle.TopGaps) > 0 {
		b.WriteString("Largest gaps:\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tstream\tat\tlength\tcause\t")
		for _, g := range r.Idle.TopGaps {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t\n", g.Device, g.Stream, units.Dur(g.Start), units.Dur(g.Dur), g.CauseName)
		}
		tw.Flush()
	}
	fmt.Fprintf(b, "\nCommunication overlapped with compute: %s of communication time, all devices pooled\n", units.Pct(r.Overlap.CommComputePct))
}

// idleUnknownText writes the idle section of a source that records no kernels: the gaps between
// its ops are measured, but whether a device sat idle in them or computed, and why, is not.
func idleUnknownText(b *strings.Builder, r *Report, o TextOptions) {
	fmt.Fprintf(b, "\nIdle: %s (%s)\n", units.Unknown, r.Idle.Unknown)
	switch {
	case r.OpsUnknown != "":
		fmt.Fprintf(b, "Gaps between ops on streams: %s (the source records no ops)\n", units.Unknown)
	case r.Idle.noTimes:
		fmt.Fprintf(b, "Gaps between ops on streams: %s (no op's time is known)\n", units.Unknown)
	default:
		fmt.Fprintf(b, "Gaps between ops on streams: %s (Σ over streams), cause %s\n", units.Dur(r.Idle.StreamNs), units.Unknown)
	}
	if len(r.Idle.Devices) > 0 {
		idleDevicesText(b, r, o)
	}
	fmt.Fprintf(b, "\nCommunication overlapped with compute: %s\n", units.Unknown)
}

func pctNum(p *float64) string {
	if p == nil {
		return units.Unknown
	}
	return fmt.Sprintf("%.1f", *p)
}

func linksText(b *strings.Builder, r *Report, o TextOptions) {
	if len(r.Links.Devices) == 0 {
		return
	}
	how := "as the engine measured each link, out + in"
	if !r.Links.Measured {
		how = "inferred from the ops, out + in; collectives as bus bytes"
	}
	unknown := false
	for _, d := range r.Links.Devices {
		unknown = unknown || d.Unattributed > 0
	}
	fmt.Fprintf(b, "\nLink traffic (%s): %s moved on links (bus bytes)\n", how, MovedBytes(r.Links))
	if e := r.Links.EmulatedBytes; e > 0 {
		fmt.Fprintf(b, "  and %s (bus bytes) emulated under --fit (ranks sharing GPUs), on no link of the topology\n", units.Bytes(e))
	}
	linkDevicesText(b, r, o, unknown)
	if unknown {
		b.WriteString("  link unknown: collectives across hosts, whose split between NVLink and NICs the source does not say, and ops between devices whose hosts are unknown (no topology, or a peer not heard from yet)\n")
	}
	if slices.ContainsFunc(r.Links.Devices, func(d analysis.DeviceLinks) bool { return len(d.LowerBound) > 0 }) {
		b.WriteString("  ≥: a lower bound, " + units.Unknown + ": unknown " + partialWhy + "\n")
	}
	fabricText(b, r.Links.Fabric)
}

// fabricText lists the hottest switch ports of the fabric: a leaf's uplink to the spines and its
// downlink, with the busiest 50 ms as a share of the port's bandwidth.
func fabricText(b *strings.Builder, f *analysis.Fabric) {
	if f == nil {
		return
	}
	capacity := "unknown"
	if f.PortBps > 0 {
		capacity = units.Rate(f.PortBps)
	}
	fmt.Fprintf(b, "\nFabric switch ports (leaf ↔ spine; ports in use: %d, %s each way): %s up, %s down; hottest:\n",
		f.Ports, capacity, units.Bytes(f.Up), units.Bytes(f.Down))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "port\tup\tdown\tbusiest 50 ms\t% of peak\t")
	for _, p := range f.Hot {
		pct := "unknown"
		if p.PeakPct != nil {
			pct = fmt.Sprintf("%.0f%%", *p.PeakPct)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", p.Name, units.Bytes(p.Up), units.Bytes(p.Down), units.Rate(p.PeakBps), pct)
	}
	tw.Flush()
	if f.Dropped > 0 {
		fmt.Fprintf(b, "  %s beyond the first %d ports were not counted\n", units.Counted(f.Dropped, "port sample"), analysis.MaxFabricPorts)
	}
}

// telemetryText writes the device telemetry: every device's row, or above SummariseAbove devices
// each metric's distribution across devices (of each device's mean) and the least utilised.
func telemetryText(b *strings.Builder, r *Report, o TextOptions) {
	tel := r.Telemetry
	if len(tel) == 0 {
		return
	}
	rowsOf := func(ts []analysis.DeviceTelemetry) {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "device\tsamples\tutil %\tPCIe rx\tPCIe tx\tpower W\ttemp °C\t")
		for _, t := range ts {
			m := t.Metrics
			mm := func(k string, scale float64, rate bool) string {
				v, ok := m.Get(k)
				if !ok {
					return units.Unknown
				}
				if rate {
					return units.Rate(v.Mean) + " / " + units.Rate(float64(v.Max))
				}
				return fmt.Sprintf("%.0f / %.0f", v.Mean/scale, float64(v.Max)/scale)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", t.Device, t.Samples, mm("utilization_pct", 1, false),
				mm("pcie_rx_bytes_per_s", 1, true), mm("pcie_tx_bytes_per_s", 1, true), mm("power_milliwatts", 1e3, false), mm("temperature_c", 1, false))
		}
		tw.Flush()
	}
	if !o.summarise(len(tel)) {
		b.WriteString("\nDevice telemetry (NVML, mean / max):\n")
		rowsOf(tel)
		return
	}
	fmt.Fprintf(b, "\nDevice telemetry (NVML: each device's mean), across %s (--per-device lists each):\n", units.Counted(len(tel), "device"))
	col := func(key string, scale float64) []float64 {
		out := make([]float64, len(tel))
		for i := range tel {
			out[i] = math.NaN() // not sampled: unknown
			if v, ok := tel[i].Metrics.Get(key); ok {
				out[i] = v.Mean / scale
			}
		}
		return out
	}
	fmtRate := func(v float64) string { return units.Rate(v) }
	writeSpreads(b, []spreadRow{
		{"util %", col("utilization_pct", 1), fmtPct},
		{"PCIe rx", col("pcie_rx_bytes_per_s", 1), fmtRate},
		{"PCIe tx", col("pcie_tx_bytes_per_s", 1), fmtRate},
		{"power W", col("power_milliwatts", 1e3), fmtPct},
		{"temp °C", col("temperature_c", 1), fmtPct},
	})
	worst := analysis.LeastUtilised(tel, o.top(), analysis.Mean)
	fmt.Fprintf(b, "The %s least utilised (mean utilisation, lowest first; --top N lists more; mean / max):\n", units.Counted(len(worst), "device"))
	rowsOf(worst)
}

// profilerCostText says what the NCCL profiler plugin cost the job's ranks: each rank up to eight
// ranks, else the median and the worst rank.
func profilerCostText(b *strings.Builder, r *Report) {
	if len(r.ProfilerCost) == 0 {
		return
	}
	pct := func(p *float64) string {
		if p == nil {
			return units.Unknown + " (no NCCL operation observed)"
		}
		return fmt.Sprintf("%.2f %%", *p)
	}
	b.WriteString("\nNCCL profiler plugin's own cost (measured in each rank's process; % of the NCCL operations' time it observed):\n")
	if len(r.ProfilerCost) <= 8 {
		for _, c := range r.ProfilerCost {
			fmt.Fprintf(b, "  rank %d: %.1f ns per callback, %s, %s\n", c.Device, c.NsPerCallback, units.Counted(c.Callbacks, "callback"), pct(c.OverheadPct))
		}
		return
	}
	s := analysis.SummarizeProfilerCost(r.ProfilerCost)
	fmt.Fprintf(b, "  %s, %s: %.1f ns per callback (p50), %.1f at worst (rank %d)\n", units.Counted(s.Ranks, "rank"), units.Counted(s.CallbacksTotal, "callback"),
		s.NsPerCallbackP50, s.NsPerCallbackMax, s.NsWorstRank)
	if s.OverheadPctMax != nil {
		fmt.Fprintf(b, "  %s of the NCCL operations' time (p50 of %s), %s at worst (rank %d)\n", pct(s.OverheadPctP50), units.Counted(s.OverheadRanks, "rank"),
			pct(s.OverheadPctMax), s.OverheadWorstRank)
	} else {
		fmt.Fprintf(b, "  share of the NCCL operations' time: %s\n", pct(nil))
	}
}

// receiveText says what xfertop listen received, and which parts of the report are partial.
func receiveText(b *strings.Builder, r *Report) {
	if x := r.Receive; x != nil {
		fmt.Fprintf(b, "\nReceived over OTLP on %s: %s from %s; %s lost, %s dropped, %s ignored, %s refused while the queue was full (resent), %s rejected, %s left out\n",
			x.Listen, units.Counted(x.Spans, "span"), units.Counted(len(x.Hosts), "host"), units.Counted(x.Lost, "event"), units.Counted(x.Duplicates, "duplicate"),
			units.Counted(x.Foreign, "foreign span"), units.Counted(x.Refused, "span"), units.Counted(x.Rejected, "request"), units.Counted(x.Invalid, "invalid span"))
		for _, h := range x.Hosts {
			fmt.Fprintf(b, "  %s (session %s, detail %s): %s, clock offset ≈ %s\n", h.Name, orUnknown(h.Session), orUnknown(h.Detail), units.Counted(h.Spans, "span"), units.Dur(h.OffsetNs))
		}
		for _, j := range x.OtherJobs {
			fmt.Fprintf(b, "  WARNING: %s\n", j)
		}
	}
	if len(r.Partial) > 0 {
		b.WriteString("\nPARTIAL: " + receivePartialWhy(r.Receive) + ":\n")
		for _, p := range r.Partial {
			fmt.Fprintf(b, "  %s\n", p)
		}
	}
}

// orUnknown is s, or "unknown" when the source did not say it (a sender without xfertop.meta.*, a
// failed import): an empty field would read as a word left out.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// receivePartialWhy says why the report is partial: only what the senders said, so a sender that did not
// say its detail is not said to have chosen spans.
func receivePartialWhy(x *Receive) string {
	if x != nil {
		for _, h := range x.Hosts {
			if h.Detail == "" {
				return "a sender did not say its --otlp-detail (detail unknown), so the report may lack what detail spans leaves out (senders with --otlp-detail full make it complete)"
			}
		}
	}
	return "the senders exported with --otlp-detail spans (use full for a complete report)"
}
