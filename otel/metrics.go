package otel

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/timeline"
)

// Metric names. Where OpenTelemetry's hardware semantic conventions have a metric that means the
// same thing, it is used (hw.gpu.utilization); everything else is xfertop's own (docs/otel.md).
const (
	MetricGPUUtilization  = "hw.gpu.utilization"        // compute time / span, hw.gpu.task=general
	MetricGPUTimeRatio    = "xfertop.gpu.time.ratio"    // idle, compute, non_compute share of the span
	MetricGPUTime         = "xfertop.gpu.time"          // seconds per state (span, busy, idle, compute, …)
	MetricGPUOverlap      = "xfertop.gpu.overlap.ratio" // compute ∩ communication / communication
	MetricLinkIO          = "xfertop.link.io"           // bytes counted on a device's link
	MetricLinkThroughput  = "xfertop.link.throughput"   // bytes/s in the latest history bucket
	MetricLinkUtilization = "xfertop.link.utilization"  // throughput / the link's peak
	MetricCollBusBW       = "xfertop.collective.busbw"  // nccl-tests busbw per (op, ranks, size class)
	MetricCollAlgBW       = "xfertop.collective.algbw"  // nccl-tests algbw
	MetricCollCount       = "xfertop.collective.count"  // instances
	MetricCommHits        = "xfertop.comm_cache.hits"   // communicator cache hits
	MetricCommMisses      = "xfertop.comm_cache.misses" // communicators created
	MetricCommEvictions   = "xfertop.comm_cache.evictions"
	MetricCommInitTime    = "xfertop.comm_cache.init.time" // Σ creation time (slowest rank's)
	MetricStreamEnd       = "xfertop.stream.end"           // session time of the latest event end

	// Per link and direction (network.io.direction = transmit or receive), on PCIe, NVLink and NIC.
	MetricGPUIO              = "hw.gpu.io"                        // bytes the GPU moved, per direction, over its links
	MetricNetworkIO          = "hw.network.io"                    // bytes per link (hw.type=network, hw.parent=the GPU) and direction
	MetricNetworkUtilization = "hw.network.bandwidth.utilization" // a direction's throughput / the link's peak
	MetricNetworkThroughput  = "xfertop.network.throughput"       // bytes/s per link and direction, latest history bucket

	// The diagnosis's findings (docs/diagnosis.md), besides their xfertop.finding span events.
	MetricFindingConfidence = "xfertop.finding.confidence" // per finding: kind, culprit (and its rank, host when known)
	MetricFindingCount      = "xfertop.finding.count"      // findings so far, per kind
)

// metrics reports an analysis.Analyzer's Result over the events the exporter receives through OTel
// metric instruments, one MeterProvider per host resource. The instruments are observable: nothing
// is computed when events arrive but the analyzer's folding; the Result is taken at collection time.
type metrics struct {
	mu     sync.Mutex
	an     *analysis.Analyzer
	labels labelTable
	cached *analysis.Result
	at     int64 // events folded when cached was taken
	hosts  []*sdkmetric.MeterProvider
	gpus   int // devices per host

	exp                      sdkmetric.Exporter
	queue                    *spanQueue   // the spans' queue: told how each export went, and says when to give up
	built, exported, dropped atomic.Int64 // data points handed to the exporter, and how each export went
}

// newMetricExporter makes the OTLP metric exporter for cfg (the traces' endpoint and protocol).
// Each attempt to reach the collector is reported to q, as the spans' are: a collector that refuses
// connections at shutdown ends both exports at once.
func newMetricExporter(ctx context.Context, cfg Config, q *spanQueue) (sdkmetric.Exporter, error) {
	u, _ := url.Parse(cfg.Endpoint)
	switch cfg.Protocol {
	case "http/protobuf":
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(cfg.Endpoint), otlpmetrichttp.WithTimeout(cfg.ExportTimeout),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: cfg.RetryFor > 0, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.RetryFor})}
		if u != nil && (u.Path == "" || strings.HasSuffix(u.Path, "/v1/traces")) {
			// One endpoint for both signals: the metrics' path beside the traces'.
			opts = append(opts, otlpmetrichttp.WithURLPath(strings.TrimSuffix(u.Path, "/v1/traces")+"/v1/metrics"))
		}
		if cfg.Insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		return otlpmetrichttp.New(ctx, opts...)
	default:
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(cfg.Endpoint), otlpmetricgrpc.WithTimeout(cfg.ExportTimeout + cfg.RetryFor),
			otlpmetricgrpc.WithDialOption(seeAttempts(q, cfg.ExportTimeout), reconnect),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: cfg.RetryFor > 0, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.RetryFor})}
		if cfg.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
}

// newMetrics starts the meter providers, one per host of the job, exporting through exp.
func newMetrics(x *Exporter, exp sdkmetric.Exporter) (*metrics, error) {
	m := &metrics{an: analysis.New(x.cfg.Meta), labels: labelTable{""}, exp: exp, queue: x.queue, at: -1, gpus: x.cfg.Meta.HostGPUs()}
	n := 1
	if d := x.cfg.Meta.Devices; d > 0 {
		n = min((d+m.gpus-1)/m.gpus, analysis.MaxDevices)
	}
	var errs []error
	for h := range n {
		// The exporter is shared: each reader's shutdown would close it, so the readers get a
		// wrapper that counts the points and leaves closing to Close.
		reader := sdkmetric.NewPeriodicReader(countingExporter{exp, m})
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(x.resource(uint16(h))), sdkmetric.WithReader(reader))
		m.hosts = append(m.hosts, mp)
		errs = append(errs, m.register(mp.Meter("github.com/xfertop/xfertop/otel"), h))
	}
	if err := errors.Join(errs...); err != nil {
		_ = m.shutdown(context.Background())
		return nil, fmt.Errorf("OTLP metric instruments: %w", err)
	}
	return m, nil
}

// fold hands a batch's events to the analyzer (the exporter's goroutine).
func (m *metrics) fold(b *timeline.Batch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(b.Strings) > 0 && int(b.First) == len(m.labels) {
		m.labels = append(m.labels, b.Strings...)
	}
	for i := range b.Events {
		m.an.Emit(&b.Events[i])
	}
}

// result returns the analyzer's Result, taken again only when events were folded since.
func (m *metrics) result() *analysis.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cached == nil || m.at != m.an.Events() {
		m.cached, m.at = m.an.Result(m.labels), m.an.Events()
	}
	return m.cached
}

type instruments struct {
	util, ratio, secs, overlap, thru, linkUtil, busbw, algbw, end metric.Float64ObservableGauge
	linkIO, collCount, hits, misses, evictions                    metric.Int64ObservableCounter
	initTime                                                      metric.Float64ObservableCounter
	gpuIO, netIO                                                  metric.Int64ObservableCounter
	netUtil, netThru                                              metric.Float64ObservableGauge
	findConf                                                      metric.Float64ObservableGauge
	findCount                                                     metric.Int64ObservableCounter
}

func (m *metrics) register(mt metric.Meter, host int) error {
	var in instruments
	var errs [22]error
	in.util, errs[0] = mt.Float64ObservableGauge(MetricGPUUtilization, metric.WithUnit("1"), metric.WithDescription("Fraction of the device's span its kernels ran (hw.gpu.task=general)."))
	in.ratio, errs[1] = mt.Float64ObservableGauge(MetricGPUTimeRatio, metric.WithUnit("1"), metric.WithDescription("Share of the device's span per state (idle, compute, non_compute)."))
	in.secs, errs[2] = mt.Float64ObservableGauge(MetricGPUTime, metric.WithUnit("s"), metric.WithDescription("Device time per state: span, busy, idle, compute, non_compute, communication, overlap."))
	in.overlap, errs[3] = mt.Float64ObservableGauge(MetricGPUOverlap, metric.WithUnit("1"), metric.WithDescription("Communication time overlapped by compute, as a share of communication time."))
	in.thru, errs[4] = mt.Float64ObservableGauge(MetricLinkThroughput, metric.WithUnit("By/s"), metric.WithDescription("Bytes per second on the device's link in the latest 50 ms of the stream."))
	in.linkUtil, errs[5] = mt.Float64ObservableGauge(MetricLinkUtilization, metric.WithUnit("1"), metric.WithDescription("Link throughput as a share of the link's peak (absent when the peak is unknown)."))
	in.busbw, errs[6] = mt.Float64ObservableGauge(MetricCollBusBW, metric.WithUnit("GBy/s"), metric.WithDescription("nccl-tests bus bandwidth per collective op, rank count and size class."))
	in.algbw, errs[7] = mt.Float64ObservableGauge(MetricCollAlgBW, metric.WithUnit("GBy/s"), metric.WithDescription("nccl-tests algorithm bandwidth per collective op, rank count and size class."))
	in.linkIO, errs[8] = mt.Int64ObservableCounter(MetricLinkIO, metric.WithUnit("By"), metric.WithDescription("Bytes counted on the device's link."))
	in.collCount, errs[9] = mt.Int64ObservableCounter(MetricCollCount, metric.WithUnit("{collective}"), metric.WithDescription("Collective instances."))
	in.hits, errs[10] = mt.Int64ObservableCounter(MetricCommHits, metric.WithUnit("{lookup}"), metric.WithDescription("Communicator cache hits."))
	in.misses, errs[11] = mt.Int64ObservableCounter(MetricCommMisses, metric.WithUnit("{communicator}"), metric.WithDescription("Communicators created (cache misses)."))
	in.evictions, errs[12] = mt.Int64ObservableCounter(MetricCommEvictions, metric.WithUnit("{communicator}"), metric.WithDescription("Communicators evicted."))
	in.initTime, errs[13] = mt.Float64ObservableCounter(MetricCommInitTime, metric.WithUnit("s"), metric.WithDescription("Time spent creating communicators (each its slowest rank's)."))
	in.end, errs[15] = mt.Float64ObservableGauge(MetricStreamEnd, metric.WithUnit("s"), metric.WithDescription("Session time of the latest event end folded: xfertop.link.throughput is of the 50 ms bucket holding it."))
	in.gpuIO, errs[16] = mt.Int64ObservableCounter(MetricGPUIO, metric.WithUnit("By"), metric.WithDescription("Bytes the GPU transmitted and received over PCIe, NVLink and NIC (network.io.direction)."))
	in.netIO, errs[17] = mt.Int64ObservableCounter(MetricNetworkIO, metric.WithUnit("By"), metric.WithDescription("Bytes on one of the GPU's links (hw.parent), per direction (network.io.direction)."))
	in.netUtil, errs[18] = mt.Float64ObservableGauge(MetricNetworkUtilization, metric.WithUnit("1"), metric.WithDescription("A direction's throughput on the link in the latest 50 ms of the stream, as a share of the link's peak (absent when the peak is unknown)."))
	in.netThru, errs[19] = mt.Float64ObservableGauge(MetricNetworkThroughput, metric.WithUnit("By/s"), metric.WithDescription("Bytes per second on the link in one direction in the latest 50 ms of the stream."))
	in.findConf, errs[20] = mt.Float64ObservableGauge(MetricFindingConfidence, metric.WithUnit("1"), metric.WithDescription("Confidence of each of the diagnosis's findings, by kind and culprit (rank and host when known), on the culprit's host."))
	in.findCount, errs[21] = mt.Int64ObservableCounter(MetricFindingCount, metric.WithUnit("{finding}"), metric.WithDescription("The diagnosis's findings so far, by kind."))
	_, errs[14] = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		r := m.result()
		seen := seenDevices(r)
		first := m.observe(o, &in, host, r, seen)
		m.observeDirs(o, &in, host, r, seen)
		m.observeFindings(o, &in, host, first, r)
		return nil
	}, in.util, in.ratio, in.secs, in.overlap, in.thru, in.linkUtil, in.busbw, in.algbw, in.linkIO, in.collCount, in.hits, in.misses,
		in.evictions, in.initTime, in.end, in.gpuIO, in.netIO, in.netUtil, in.netThru, in.findConf, in.findCount)
	return errors.Join(errs[:]...)
}

func gpuAttrs(dev int32, more ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributes(append([]attribute.KeyValue{attribute.String("hw.type", "gpu"), attribute.String("hw.id", fmt.Sprintf("gpu-%d", dev)),
		attribute.Int("xfertop.device", int(dev))}, more...)...)
}

// observe reports r's numbers for host's devices; the job-wide ones (collectives, communicator
// cache) go with the lowest host that has a device in r, so each appears once per process. It
// returns that host.
func (m *metrics) observe(o metric.Observer, in *instruments, host int, r *analysis.Result, seen deviceSet) int {
	first := -1
	for _, d := range r.Links.Devices {
		if h := m.hostOf(r, d.Device); seen.has(d.Device) && (first < 0 || h < first) {
			first = h
		}
	}
	for _, d := range r.Breakdown.Devices {
		if h := m.hostOf(r, d.Device); first < 0 || h < first {
			first = h
		}
	}
	first = max(first, 0)
	for _, t := range r.Breakdown.Devices {
		if m.hostOf(r, t.Device) != host {
			continue
		}
		if t.NoKernels {
			// A source without kernels: its span and communication are measured, the rest is
			// unknown, and an unknown is no observation rather than a 0.
			o.ObserveFloat64(in.secs, float64(t.SpanNs)/1e9, gpuAttrs(t.Device, attribute.String("xfertop.gpu.state", "span")))
			o.ObserveFloat64(in.secs, float64(t.CommNs)/1e9, gpuAttrs(t.Device, attribute.String("xfertop.gpu.state", "communication")))
			continue
		}
		o.ObserveFloat64(in.util, t.ComputePct/100, gpuAttrs(t.Device, attribute.String("hw.gpu.task", "general")))
		for _, s := range []struct {
			state string
			pct   float64
		}{{"idle", t.IdlePct}, {"compute", t.ComputePct}, {"non_compute", t.NonCompPct}} {
			o.ObserveFloat64(in.ratio, s.pct/100, gpuAttrs(t.Device, attribute.String("xfertop.gpu.state", s.state)))
		}
		for _, s := range []struct {
			state string
			ns    int64
		}{{"span", t.SpanNs}, {"busy", t.BusyNs}, {"idle", t.IdleNs}, {"compute", t.ComputeNs}, {"non_compute", t.NonCompNs},
			{"communication", t.CommNs}, {"overlap", t.OverlapNs}} {
			o.ObserveFloat64(in.secs, float64(s.ns)/1e9, gpuAttrs(t.Device, attribute.String("xfertop.gpu.state", s.state)))
		}
		if t.OverlapPct != nil {
			o.ObserveFloat64(in.overlap, *t.OverlapPct/100, gpuAttrs(t.Device))
		}
	}
	bucket := latestBucket(r)
	peaks := m.an.Meta().LinkPeaks
	for _, d := range r.Links.Devices {
		if m.hostOf(r, d.Device) != host || !seen.has(d.Device) {
			continue
		}
		for l := range analysis.NumLinks {
			link := attribute.String("xfertop.link", l.String())
			o.ObserveInt64(in.linkIO, d.Bytes(l), gpuAttrs(d.Device, link))
			rate, ok := d.Rate(l, bucket)
			if !ok {
				continue
			}
			o.ObserveFloat64(in.thru, rate, gpuAttrs(d.Device, link))
			if p := peaks[l]; p > 0 {
				o.ObserveFloat64(in.linkUtil, rate/p, gpuAttrs(d.Device, link))
			}
		}
	}
	if host != first {
		return first
	}
	for _, c := range r.Collectives.Rows {
		// A rank count or size class the source did not record (0) is left out, not sent as 0.
		attrs := []attribute.KeyValue{attribute.String("xfertop.collective.op", c.Op)}
		if c.Ranks > 0 {
			attrs = append(attrs, attribute.Int("xfertop.collective.ranks", c.Ranks))
		}
		if c.SizeClass > 0 {
			attrs = append(attrs, attribute.Int64("xfertop.collective.size_class", c.SizeClass))
		}
		kind := metric.WithAttributes(attrs...)
		o.ObserveInt64(in.collCount, c.Count, kind)
		if c.BusBW != nil {
			o.ObserveFloat64(in.busbw, *c.BusBW, kind)
		}
		if c.AlgBW != nil {
			o.ObserveFloat64(in.algbw, *c.AlgBW, kind)
		}
	}
	o.ObserveFloat64(in.end, float64(r.FirstNs+r.DurationNs)/1e9)
	if r.CommCache.Known { // a trace that does not record the cache exports no zeros for it
		o.ObserveInt64(in.hits, r.CommCache.Hits)
		o.ObserveInt64(in.misses, r.CommCache.Misses)
		o.ObserveInt64(in.evictions, r.CommCache.Evictions)
		o.ObserveFloat64(in.initTime, float64(r.CommCache.InitNsTotal)/1e9)
	}
	return first
}

// observeFindings reports the diagnosis's findings: each one's confidence on its culprit's host
// (the first host's when the culprit's is not known or not this process's), named by kind and
// culprit, with the culprit's rank and host when known (absent, not -1, when not; several findings
// of one kind and culprit are one series, at the highest confidence); and, with the job-wide
// figures, how many findings of each kind there are (0 included: none is a known count).
func (m *metrics) observeFindings(o metric.Observer, in *instruments, host, first int, r *analysis.Result) {
	var count [diagnosis.Deadlock + 1]int64
	type series struct {
		attrs []attribute.KeyValue
		conf  float64
	}
	var order []string
	byKey := map[string]*series{}
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Kind <= diagnosis.Deadlock {
			count[f.Kind]++
		}
		at := first
		if f.Host >= 0 && int(f.Host) < len(m.hosts) {
			at = int(f.Host)
		}
		if at != host {
			continue
		}
		key := f.Kind.String() + "\x00" + f.Culprit()
		if s := byKey[key]; s != nil {
			s.conf = max(s.conf, f.Confidence)
			continue
		}
		attrs := []attribute.KeyValue{attribute.String("xfertop.finding.kind", f.Kind.String()), attribute.String("xfertop.finding.culprit", f.Culprit())}
		if f.Rank >= 0 {
			attrs = append(attrs, attribute.Int("xfertop.finding.rank", int(f.Rank)))
		}
		if f.Host >= 0 {
			attrs = append(attrs, attribute.Int("xfertop.finding.host", int(f.Host)))
		}
		byKey[key] = &series{attrs: attrs, conf: f.Confidence}
		order = append(order, key)
	}
	for _, k := range order {
		o.ObserveFloat64(in.findConf, byKey[k].conf, metric.WithAttributes(byKey[k].attrs...))
	}
	if host != first {
		return
	}
	for k := diagnosis.SlowLink; k <= diagnosis.Deadlock; k++ {
		o.ObserveInt64(in.findCount, count[k], metric.WithAttributes(attribute.String("xfertop.finding.kind", k.String())))
	}
}

// deviceSet is a set of device ids: those below analysis.MaxDevices by id, the others (a 100,000-GPU
// job, a trace's sparse ids up to 2³¹−1) in a map, as the analysis keeps them, so that it is sized
// by the devices present.
type deviceSet struct {
	near []bool
	far  map[int32]bool
}

func (s *deviceSet) add(d int32) {
	switch {
	case d < 0:
	case d < analysis.MaxDevices:
		if int(d) >= len(s.near) {
			s.near = append(s.near, make([]bool, int(d)+1-len(s.near))...)
		}
		s.near[d] = true
	default:
		if s.far == nil {
			s.far = map[int32]bool{}
		}
		s.far[d] = true
	}
}

func (s *deviceSet) has(d int32) bool {
	if d >= 0 && d < analysis.MaxDevices {
		return int(d) < len(s.near) && s.near[d]
	}
	return s.far[d]
}

// seenDevices is the devices this process has anything of: an op of its own (a breakdown row) or
// bytes on a link. The analysis lists every device id below the highest with traffic; a process
// exporting one host's share of a job must not report the other hosts' devices as idle zeros, which
// would sit beside the real series of the process that has them. Every device the analysis counts
// is in it, whatever its id.
func seenDevices(r *analysis.Result) deviceSet {
	var seen deviceSet
	for _, t := range r.Breakdown.Devices {
		seen.add(t.Device)
	}
	for _, d := range r.Links.Devices {
		if d.Total > 0 {
			seen.add(d.Device)
		}
	}
	return seen
}

// hostOf is the host whose meter provider reports device d: its own as the analysis's host map
// places it (r.Hosts, as the findings and the console place it), or the first host's where the
// map does not know it or the job's description names no such host (a trace's ids past its
// devices, 20,000 or 2³¹−1, or a job without hosts, which is one host): its series name the device
// all the same (xfertop.device, hw.id), and are left out nowhere.
func (m *metrics) hostOf(r *analysis.Result, d int32) int {
	if h, ok := r.Hosts.Host(d); ok && int(h) < len(m.hosts) {
		return int(h)
	}
	return 0
}

// observeDirs reports host's devices' traffic per link and direction, as the analysis counts it:
// hw.network.* per link (a network device whose parent is the GPU), hw.gpu.io per GPU over its
// links.
func (m *metrics) observeDirs(o metric.Observer, in *instruments, host int, r *analysis.Result, seen deviceSet) {
	bucket := latestBucket(r)
	peaks := m.an.Meta().LinkPeaks
	for i := range r.Links.Devices {
		d := &r.Links.Devices[i]
		dev := d.Device
		if m.hostOf(r, dev) != host || !seen.has(dev) {
			continue
		}
		var gpu [analysis.NumDirs]int64
		for _, l := range netLinks {
			for dir := range analysis.NumDirs {
				gpu[dir] += d.Dir[l][dir]
				attrs := netAttrs(dev, l, dir)
				o.ObserveInt64(in.netIO, d.Dir[l][dir], attrs)
				rate, ok := d.RateDir(l, dir, bucket)
				if !ok {
					continue
				}
				o.ObserveFloat64(in.netThru, rate, attrs)
				if p := peaks[l]; p > 0 {
					o.ObserveFloat64(in.netUtil, rate/p, attrs)
				}
			}
		}
		for dir := range analysis.NumDirs {
			o.ObserveInt64(in.gpuIO, gpu[dir], gpuAttrs(dev, attribute.String("network.io.direction", dirNames[dir])))
		}
	}
}

// dirNames are the directions as OpenTelemetry's network.io.direction names them.
var dirNames = [analysis.NumDirs]string{analysis.DirTx: "transmit", analysis.DirRx: "receive"}

// netLinks are the links whose traffic has a direction: HBM (a copy within one device's memory)
// is counted by xfertop.link.* only.
var netLinks = [...]analysis.Link{analysis.LinkPCIe, analysis.LinkNVLink, analysis.LinkNIC}

// netAttrs names one direction of one of a GPU's links as OpenTelemetry's hardware conventions
// name a network device: its own hw.id, hw.type network, the GPU as hw.parent.
func netAttrs(dev int32, l analysis.Link, dir int) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("hw.type", "network"), attribute.String("hw.id", fmt.Sprintf("gpu-%d-%s", dev, strings.ToLower(l.String()))),
		attribute.String("hw.name", l.String()), attribute.String("hw.parent", fmt.Sprintf("gpu-%d", dev)),
		attribute.Int("xfertop.device", int(dev)), attribute.String("xfertop.link", l.String()),
		attribute.String("network.io.direction", dirNames[dir]))
}

// latestBucket is the throughput history bucket xfertop.link.throughput reports: the one holding the
// end of the stream so far.
func latestBucket(r *analysis.Result) int64 { return (r.FirstNs + r.DurationNs) / analysis.BucketNs }

// shutdown collects and exports each host's metrics a last time, within ctx, then closes the
// exporter. A collection not exported by then counts its points as dropped.
func (m *metrics) shutdown(ctx context.Context) error {
	// The spans' export abandoned (the budget is spent, or the collector refuses connections): the
	// metrics' gives up too rather than retry a collector known to be gone.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-m.queue.gone:
			cancel(errors.New("the span export was abandoned"))
		case <-ctx.Done():
		}
	}()
	errs := make([]error, len(m.hosts))
	var wg sync.WaitGroup
	for i, mp := range m.hosts {
		wg.Go(func() { errs[i] = mp.Shutdown(ctx) })
	}
	wg.Wait()
	// The exporter closes its connection even when ctx has ended.
	return errors.Join(append(errs, m.exp.Shutdown(ctx))...)
}

// countingExporter counts the data points of every export, exported or dropped, and leaves the
// shared exporter open when a reader shuts down.
type countingExporter struct {
	sdkmetric.Exporter
	m *metrics
}

func (c countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	n := points(rm)
	c.m.built.Add(n)
	err := c.Exporter.Export(ctx, rm)
	c.m.queue.attempt(err)
	if err != nil {
		c.m.dropped.Add(n)
		return err
	}
	c.m.exported.Add(n)
	return nil
}

func (countingExporter) Shutdown(context.Context) error { return nil }

// points counts the data points in rm.
func points(rm *metricdata.ResourceMetrics) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Gauge[float64]:
				n += int64(len(d.DataPoints))
			case metricdata.Gauge[int64]:
				n += int64(len(d.DataPoints))
			case metricdata.Sum[float64]:
				n += int64(len(d.DataPoints))
			case metricdata.Sum[int64]:
				n += int64(len(d.DataPoints))
			}
		}
	}
	return n
}
