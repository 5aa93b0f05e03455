package otel_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
)

// expectedMetrics lays out what the metrics of a run must say, from the run's own report: every
// series the exporter reports, keyed as the receiver keys them. end is xfertop.stream.end as
// received (the throughput series are of the history bucket holding it).
//
// The report counts a link's bytes without direction. The runs tested move bytes two ways, which
// fix each direction's share: with colls, collectives only (every rank transmits and receives its
// bus bytes: each direction is the report's count); without, exchanges (each device sends and
// receives as much at the same times: each direction is half the report's count).
func expectedMetrics(rep *report.Report, peaks [4]float64, end float64, colls bool) map[string]float64 {
	// The hosts as the run's description lays them out (timeline.Meta.HostGPUs); a device of a
	// host the description does not name (a trace's 20,000) is reported on the first host.
	gpus := rep.GPUsPerHost
	switch {
	case gpus > 0:
	case rep.Devices > 0:
		gpus = rep.Devices
	default:
		gpus = math.MaxInt32
	}
	described := 1
	if rep.Devices > 0 {
		described = (rep.Devices + gpus - 1) / gpus
	}
	host := func(dev int32) string {
		if h := int(dev) / gpus; h < described {
			return fmt.Sprintf("host-%d", h)
		}
		return "host-0"
	}
	gpu := func(dev int32, more ...string) []string {
		return append([]string{"hw.type=gpu", fmt.Sprintf("hw.id=gpu-%d", dev), fmt.Sprintf("xfertop.device=%d", dev)}, more...)
	}
	want := map[string]float64{}
	first := ""
	for _, t := range rep.Idle.Devices {
		h := host(t.Device)
		if first == "" || h < first {
			first = h
		}
		want[seriesKey(h, otel.MetricGPUUtilization, gpu(t.Device, "hw.gpu.task=general")...)] = t.ComputePct / 100
		for state, pct := range map[string]float64{"idle": t.IdlePct, "compute": t.ComputePct, "non_compute": t.NonCompPct} {
			want[seriesKey(h, otel.MetricGPUTimeRatio, gpu(t.Device, "xfertop.gpu.state="+state)...)] = pct / 100
		}
		for state, ns := range map[string]int64{"span": t.SpanNs, "busy": t.BusyNs, "idle": t.IdleNs, "compute": t.ComputeNs,
			"non_compute": t.NonCompNs, "communication": t.CommNs, "overlap": t.OverlapNs} {
			want[seriesKey(h, otel.MetricGPUTime, gpu(t.Device, "xfertop.gpu.state="+state)...)] = float64(ns) / 1e9
		}
		if t.OverlapPct != nil {
			want[seriesKey(h, otel.MetricGPUOverlap, gpu(t.Device)...)] = *t.OverlapPct / 100
		}
	}
	bucket := int64(math.Round(end*1e9)) / analysis.BucketNs
	for _, d := range rep.Links.Devices {
		h := host(d.Device)
		if first == "" || h < first {
			first = h
		}
		for l := range analysis.NumLinks {
			link := "xfertop.link=" + l.String()
			want[seriesKey(h, otel.MetricLinkIO, gpu(d.Device, link)...)] = float64(d.Bytes(l))
			if rate, ok := d.Rate(l, bucket); ok {
				want[seriesKey(h, otel.MetricLinkThroughput, gpu(d.Device, link)...)] = rate
				if peaks[l] > 0 {
					want[seriesKey(h, otel.MetricLinkUtilization, gpu(d.Device, link)...)] = rate / peaks[l]
				}
			}
		}
		var gpuIO [analysis.NumDirs]float64
		for _, l := range []analysis.Link{analysis.LinkPCIe, analysis.LinkNVLink, analysis.LinkNIC} {
			for dir, dname := range []string{"transmit", "receive"} {
				gpuIO[dir] += float64(d.Dir[l][dir])
				net := []string{"hw.type=network", fmt.Sprintf("hw.id=gpu-%d-%s", d.Device, strings.ToLower(l.String())), "hw.name=" + l.String(),
					fmt.Sprintf("hw.parent=gpu-%d", d.Device), fmt.Sprintf("xfertop.device=%d", d.Device), "xfertop.link=" + l.String(), "network.io.direction=" + dname}
				want[seriesKey(h, otel.MetricNetworkIO, net...)] = float64(d.Dir[l][dir])
				if rate, ok := d.RateDir(l, dir, bucket); ok {
					want[seriesKey(h, otel.MetricNetworkThroughput, net...)] = rate
					if peaks[l] > 0 {
						want[seriesKey(h, otel.MetricNetworkUtilization, net...)] = rate / peaks[l]
					}
				}
			}
		}
		for dir, dname := range []string{"transmit", "receive"} {
			want[seriesKey(h, otel.MetricGPUIO, gpu(d.Device, "network.io.direction="+dname)...)] = gpuIO[dir]
		}
	}
	for _, c := range rep.Collectives {
		kind := []string{"xfertop.collective.op=" + c.Op, fmt.Sprintf("xfertop.collective.ranks=%d", c.Ranks), fmt.Sprintf("xfertop.collective.size_class=%d", c.SizeClass)}
		want[seriesKey(first, otel.MetricCollCount, kind...)] = float64(c.Count)
		if c.BusBW != nil {
			want[seriesKey(first, otel.MetricCollBusBW, kind...)] = *c.BusBW
		}
		if c.AlgBW != nil {
			want[seriesKey(first, otel.MetricCollAlgBW, kind...)] = *c.AlgBW
		}
	}
	want[seriesKey(first, otel.MetricStreamEnd)] = end
	if rep.CommCache.Known { // a trace that does not record the cache exports no zeros for it
		want[seriesKey(first, otel.MetricCommHits)] = float64(rep.CommCache.Hits)
		want[seriesKey(first, otel.MetricCommMisses)] = float64(rep.CommCache.Misses)
		want[seriesKey(first, otel.MetricCommEvictions)] = float64(rep.CommCache.Evictions)
		want[seriesKey(first, otel.MetricCommInitTime)] = float64(rep.CommCache.InitNsTotal) / 1e9
	}
	count := map[string]float64{}
	for k := diagnosis.SlowLink; k <= diagnosis.Deadlock; k++ {
		count[k.String()] = 0
	}
	hosts := (rep.Devices + gpus - 1) / gpus
	for _, f := range rep.Findings {
		count[f.Kind]++
		h := first
		attrs := []string{"xfertop.finding.kind=" + f.Kind, "xfertop.finding.culprit=" + f.Culprit}
		if f.Rank != nil {
			attrs = append(attrs, fmt.Sprintf("xfertop.finding.rank=%d", *f.Rank))
		}
		if f.Host != nil {
			attrs = append(attrs, fmt.Sprintf("xfertop.finding.host=%d", *f.Host))
			if int(*f.Host) < hosts {
				h = fmt.Sprintf("host-%d", *f.Host)
			}
		}
		k := seriesKey(h, otel.MetricFindingConfidence, attrs...)
		want[k] = max(want[k], f.Confidence)
	}
	for kind, n := range count {
		want[seriesKey(first, otel.MetricFindingCount, "xfertop.finding.kind="+kind)] = n
	}
	return want
}

// The metrics a run exports (their last collection, taken at Close) say what the run's report
// says, series for series, over gRPC and HTTP/protobuf; every data point built is counted exported.
func TestMetricsEqualReport(t *testing.T) {
	for _, tc := range []struct {
		scenario, proto string
		colls           bool   // the run has collectives
		fault           string // injected: the run's findings are exported too
	}{{"crosshost", "grpc", false, ""}, {"crosshost", "http/protobuf", false, ""}, {"allreduce-sweep", "grpc", true, ""},
		{"crosshost", "grpc", false, "kind=gpu_slow,rank=9,factor=0.5"}} {
		t.Run(tc.scenario+"/"+tc.proto+"/"+tc.fault, func(t *testing.T) {
			r := newReceiver()
			if tc.proto == "grpc" {
				r.startGRPC(t, "127.0.0.1:0")
			} else {
				r.startHTTP(t)
			}
			defer r.stop()
			cfg := session.Config{Scenario: tc.scenario, Steps: 2, Export: configFor(t, r.addr, tc.proto)}
			if tc.fault != "" {
				f, err := fault.Parse(tc.fault)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Faults, cfg.Steps = []fault.Fault{f}, 4
			}
			p, out := exportRunConfig(t, cfg)
			rep := p.Report(out)
			if (len(rep.Findings) == 0) != (tc.fault == "") {
				t.Fatalf("findings %+v; want %s", rep.Findings, map[bool]string{true: "none", false: "the fault's"}[tc.fault == ""])
			}
			got, received := r.metricsService.snapshot()
			st := p.ExportStats()
			if st.MetricPoints == 0 || st.MetricPointsExported != st.MetricPoints || st.MetricPointsDropped != 0 || received != st.MetricPointsExported {
				t.Fatalf("metric points: stats %+v, receiver got %d", st, received)
			}
			var end float64
			for k, v := range got {
				if strings.HasSuffix(k, " "+otel.MetricStreamEnd+"{}") {
					end = v
				}
			}
			want := expectedMetrics(rep, p.Meta().LinkPeaks, end, tc.colls)
			if (len(rep.Collectives) == 0) == tc.colls || rep.CommCache.Misses == 0 || len(rep.Links.Devices) == 0 {
				t.Fatalf("the run exercises too little: %d collective rows, %d communicators, %d devices with links",
					len(rep.Collectives), rep.CommCache.Misses, len(rep.Links.Devices))
			}
			kinds := map[string]int{}
			for k := range want {
				for _, name := range []string{"host-1 ", otel.MetricLinkThroughput + "{", otel.MetricLinkUtilization + "{", otel.MetricCollBusBW + "{",
					"host-1 " + otel.MetricFindingConfidence + "{"} {
					if strings.Contains(k, name) {
						kinds[name]++
					}
				}
			}
			if kinds[otel.MetricLinkThroughput+"{"] == 0 || kinds[otel.MetricLinkUtilization+"{"] == 0 || (kinds["host-1 "] == 0) == (tc.scenario == "crosshost") ||
				(kinds[otel.MetricCollBusBW+"{"] == 0) == tc.colls || (kinds["host-1 "+otel.MetricFindingConfidence+"{"] == 0) == (tc.fault != "") {
				t.Fatalf("the run's metrics lack a kind of series: %v", kinds)
			}
			for k, v := range want {
				g, ok := got[k]
				switch {
				case !ok:
					t.Errorf("%s: not received; the report says %v", k, v)
				case g != v:
					t.Errorf("%s = %v; the report says %v", k, g, v)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s received; the report has no such figure", k)
				}
			}
		})
	}
}

// OTEL_METRICS_EXPORTER=none: spans only; nothing reaches the metrics service.
func TestMetricsOff(t *testing.T) {
	r := newReceiver()
	r.startGRPC(t, "127.0.0.1:0")
	defer r.stop()
	cfg := configFor(t, r.addr, "grpc")
	cfg.NoMetrics = true
	p, _ := exportRun(t, "crosshost", 2, 0, cfg)
	_, received := r.metricsService.snapshot()
	if st := p.ExportStats(); received != 0 || st.MetricPoints != 0 || st.SpansExported == 0 || st.SpansExported != st.SpansBuilt {
		t.Errorf("metrics off: the collector got %d points; stats %+v", received, st)
	}
}
