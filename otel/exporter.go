package otel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/analysis/hostmap"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// QuietErrors makes the OpenTelemetry SDK's global error handler silent. The SDK reports failed
// exports there, and its default prints to standard error, which would write over the console;
// the Exporter counts and reports failures itself (Stats.State). The command calls it once at start.
func QuietErrors() { otelapi.SetErrorHandler(otelapi.ErrorHandlerFunc(func(error) {})) }

// Stats says how the export is going. Every span built is, in the end, exported or dropped: once
// Close has returned, SpansBuilt == SpansExported + SpansDropped (before, the rest is queued).
type Stats struct {
	Endpoint      string `json:"endpoint"`
	Protocol      string `json:"protocol"`
	State         string `json:"state"`   // "ok", "failing: …", "starting"
	Failing       bool   `json:"failing"` // the last export failed: State says how
	SpansBuilt    int64  `json:"spans_built"`
	SpansExported int64  `json:"spans_exported"`
	SpansDropped  int64  `json:"spans_dropped"`  // in exports that failed for good, and still queued when shutdown gave up
	EventsDropped int64  `json:"events_dropped"` // events the queue could not take
	// DropReason is why spans were last dropped (the failed export's error), kept after later
	// exports succeed: State says how the export goes now, this why the drop count grew.
	DropReason    string `json:"drop_reason,omitempty"`
	StepsSampled  int64  `json:"steps_exported"`
	StepsSkipped  int64  `json:"steps_skipped"`   // by the sampling ratio
	StepsOverRate int64  `json:"steps_over_rate"` // skipped whole because the span budget was spent
	// SampleRatio and MaxRate are the sampling ratio and the span budget (spans/s, 0: none) in
	// effect: what skipped the steps above.
	SampleRatio float64 `json:"sample_ratio"`
	MaxRate     float64 `json:"max_rate"`
	// Metric data points handed to the OTLP metric exporter, and how their exports went: once Close
	// has returned, MetricPoints == MetricPointsExported + MetricPointsDropped.
	MetricPoints         int64 `json:"metric_points"`
	MetricPointsExported int64 `json:"metric_points_exported"`
	MetricPointsDropped  int64 `json:"metric_points_dropped"`
}

// Exporter turns events into spans and exports them. It is a timeline.Sink: Emit never blocks.
// Emit must be called from the producer's goroutine; Stats and Close from any.
type Exporter struct {
	cfg     Config
	batches *timeline.Batches
	closed  atomic.Bool
	queue   *spanQueue
	real    sdktrace.SpanExporter
	hosts   map[uint16]*sdktrace.TracerProvider
	done    chan struct{}
	metrics *metrics // nil without OTLP metrics (NewWithExporter)
	// metricsReady is closed once metrics is set: the loop reads it only then.
	metricsReady chan struct{}

	labels        []string // the builder's copy of the string table
	pending       []timeline.Event
	built         atomic.Int64
	stepsKept     atomic.Int64
	stepsSkipped  atomic.Int64
	stepsOverRate atomic.Int64
	tokens        float64 // the span budget (token bucket), refilled at MaxRate per second
	refilled      time.Time
	seq           int64  // DetailFull: the next event's place in the stream
	session       string // this exporter's id (xfertop.session), so a receiver orders its events by seq
	// diag folds what crosses to the builder (every event when metrics are exported) into the
	// diagnosis's findings; each is attached once, as a span event of the next step's root.
	diag     *diagnosis.Diagnosis
	hostMap  *hostmap.Map // the diagnosis's host map, fed the events before it
	reported map[findingKey]bool

	// names are the hosts' names (the description's, and those a live source gave by NameHost,
	// on the producer's goroutine); the loop hands the new ones to hostMap.
	namesMu sync.Mutex
	names   map[int32]string
	changed bool // names has a name hostMap lacks
}

type findingKey struct {
	kind       diagnosis.Kind
	rank, host int32
	onset      int64
}

// New starts an exporter for cfg. src is the session's string table (read only inside Emit).
func New(ctx context.Context, cfg Config, src *timeline.Strings) (*Exporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	u, _ := url.Parse(cfg.Endpoint)
	retry := cfg.RetryFor
	q := newSpanQueue(cfg.ExportTimeout + cfg.RetryFor)
	q.probe, q.patient = probePort(u), cfg.Detail == DetailFull
	switch cfg.Protocol {
	case "http/protobuf":
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.Endpoint), otlptracehttp.WithTimeout(cfg.ExportTimeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: retry > 0, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: retry})}
		if u != nil && u.Path == "" {
			opts = append(opts, otlptracehttp.WithURLPath("/v1/traces"))
		}
		if cfg.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	default:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(cfg.Endpoint), otlptracegrpc.WithTimeout(cfg.ExportTimeout + retry),
			otlptracegrpc.WithDialOption(seeAttempts(q, cfg.ExportTimeout), reconnect),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: retry > 0, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: retry})}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	if cfg.NoMetrics {
		x := newExporter(cfg, exp, q, src, false)
		close(x.metricsReady)
		return x, nil
	}
	mexp, err := newMetricExporter(ctx, cfg, q)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTLP metric exporter for %s: %w", cfg.Endpoint, err)
	}
	x := newExporter(cfg, exp, q, src, true)
	x.metrics, err = newMetrics(x, mexp)
	close(x.metricsReady)
	if err != nil {
		_ = x.Close(ctx)
		return nil, err
	}
	return x, nil
}

// NewWithExporter is New over any span exporter (an in-memory one in tests).
func NewWithExporter(cfg Config, exp sdktrace.SpanExporter, src *timeline.Strings) *Exporter {
	x := newExporter(cfg, exp, newSpanQueue(cfg.ExportTimeout+cfg.RetryFor), src, false)
	close(x.metricsReady)
	return x
}

// newExporter starts the exporter; with metrics, every event crosses to its goroutine (the analyzer
// needs them all), and x.metrics must be set, then metricsReady closed.
func newExporter(cfg Config, exp sdktrace.SpanExporter, q *spanQueue, src *timeline.Strings, metrics bool) *Exporter {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = DefaultServiceName
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	full := cfg.Detail == DetailFull
	if full {
		cfg.SampleRatio, cfg.MaxRate, cfg.MinSpan = 1, 0, 0
	}
	// Only events that make or annotate spans (about one in eight) cross to the builder, unless every
	// event is exported.
	keepEvent := func(e *timeline.Event) bool { return metrics || spanEvent(e, full) }
	x := &Exporter{cfg: cfg, batches: timeline.NewBatches(src, cfg.Batch, cfg.Queue, 250*time.Millisecond, keepEvent),
		queue: q, real: exp, hosts: map[uint16]*sdktrace.TracerProvider{}, done: make(chan struct{}),
		labels: []string{""}, session: newSessionID(), metricsReady: make(chan struct{}),
		hostMap: hostmap.New(cfg.Meta), reported: map[findingKey]bool{}, names: timeline.HostNames(cfg.Meta)}
	x.diag = diagnosis.New(x.hostMap)
	x.diag.SetLinkPeaks(cfg.Meta.LinkPeaks)
	x.batches.SetBlocking(full) // lossless: the producer waits for the export rather than lose events
	q.start(exp)
	go x.loop()
	return x
}

// NameHost takes the name a live source learned for host h (timeline.HostNamer): the host's
// resource (host.name) and the findings' culprits name it where they are made after it.
func (x *Exporter) NameHost(h int32, name string) {
	x.namesMu.Lock()
	defer x.namesMu.Unlock()
	if h < 0 || name == "" || x.names[h] == name {
		return
	}
	if x.names == nil {
		x.names = map[int32]string{}
	}
	x.names[h] = name
	x.changed = true
}

// hostName is host h's host.name: the name a source gave it, else host-h.
func (x *Exporter) hostName(h uint16) string {
	x.namesMu.Lock()
	defer x.namesMu.Unlock()
	if n, ok := x.names[int32(h)]; ok {
		return n
	}
	if h == timeline.NoHost {
		// A rank no source placed (a partial join): its host is unknown, not a host 65535.
		return "unknown"
	}
	return fmt.Sprintf("host-%d", h)
}

// applyNames hands hostMap the names NameHost took since (the loop's goroutine).
func (x *Exporter) applyNames() {
	x.namesMu.Lock()
	defer x.namesMu.Unlock()
	if !x.changed {
		return
	}
	for h, n := range x.names {
		x.hostMap.NameHost(h, n)
	}
	x.changed = false
}

// Emit queues a copy of e; when the queue is full the batch is dropped and counted. It never blocks.
func (x *Exporter) Emit(e *timeline.Event) { x.batches.Emit(e) }

// spanEvent reports whether the span builder needs e.
func spanEvent(e *timeline.Event, full bool) bool {
	return full || e.Kind == timeline.KindStep || keep(e)
}

func (x *Exporter) loop() {
	defer close(x.done)
	<-x.metricsReady
	for b := range x.batches.C() {
		x.consume(b)
		x.batches.Release(b)
	}
}

func (x *Exporter) consume(b *timeline.Batch) {
	x.applyNames()
	if len(b.Strings) > 0 && int(b.First) == len(x.labels) {
		x.labels = append(x.labels, b.Strings...)
	}
	if x.metrics != nil {
		x.metrics.fold(b)
	}
	full := x.cfg.Detail == DetailFull
	for i := range b.Events {
		e := &b.Events[i]
		x.hostMap.Add(e)
		x.diag.Add(e)
		if x.metrics != nil && !spanEvent(e, full) {
			continue
		}
		if e.Kind == timeline.KindStep {
			x.flushStep(e, x.pending)
			x.pending = x.pending[:0]
			continue
		}
		x.pending = append(x.pending, *e)
		if len(x.pending) >= maxPending {
			x.flushTail()
		}
	}
}

// maxPending bounds the events held for the next step. A stream whose steps another process
// exports (one host's share of a job) or that has none (an attached job between steps) would
// otherwise hold every event until the end: past the bound they go out under a tail root.
const maxPending = 1 << 14

// flushTail exports the events held for the next step under a root of their own (a tail: no
// step event), on its first event's host: a process that exports one host's share of a job must
// not name a host it has nothing of.
func (x *Exporter) flushTail() {
	if len(x.pending) == 0 {
		return
	}
	tail := timeline.Event{Kind: timeline.KindStep, Start: x.pending[0].Start, End: x.pending[len(x.pending)-1].End, Aux: tailStep,
		Host: x.pending[0].Host}
	for _, e := range x.pending {
		tail.Start, tail.End = min(tail.Start, e.Start), max(tail.End, e.End)
	}
	x.flushStep(&tail, x.pending)
	x.pending = x.pending[:0]
}

// keep reports whether the builder needs an event: span kinds and what annotates them.
func keep(e *timeline.Event) bool {
	switch e.Kind {
	case timeline.KindAlert, timeline.KindPeerWait:
		return true
	}
	return exported(e, false)
}

type labelTable []string

func (l labelTable) Lookup(id uint32) string {
	if int(id) < len(l) {
		return l[id]
	}
	return ""
}

// sampled decides, the same way every time, whether step n is exported.
func sampled(n uint32, ratio float64) bool {
	if ratio >= 1 {
		return true
	}
	h := uint64(n+1) * 0x9E3779B97F4A7C15
	return float64(h>>11)/float64(1<<53) < ratio
}

func (x *Exporter) provider(host uint16) *sdktrace.TracerProvider {
	if tp, ok := x.hosts[host]; ok {
		return tp
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(x.resource(host)), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(x.queue))
	x.hosts[host] = tp
	return tp
}

// resource describes one host of the run: its traces and its metrics share it.
func (x *Exporter) resource(host uint16) *resource.Resource {
	// Defaults first, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, then the host: hosts must
	// stay separate processes in Jaeger whatever the environment says.
	own := []attribute.KeyValue{attribute.String("service.name", x.cfg.ServiceName), attribute.String("host.name", x.hostName(host)),
		ResHost.Int(int(host)), ResSession.String(x.session), ResDetail.String(x.detail())}
	// The run's description, so that a receiver analyses the events as the run itself would.
	m := x.cfg.Meta
	m.EpochUnixNs = x.cfg.Epoch.UnixNano()
	for _, kv := range recordings.MetaPairs(m) {
		if kv[1] != "" {
			own = append(own, attribute.String(ResMetaPrefix+kv[0], kv[1]))
		}
	}
	res, err := resource.New(context.Background(),
		resource.WithAttributes(attribute.String("service.name", x.cfg.ServiceName)),
		resource.WithFromEnv(),
		resource.WithAttributes(own...))
	if err != nil {
		res = resource.NewSchemaless(attribute.String("service.name", x.cfg.ServiceName), attribute.String("host.name", x.hostName(host)))
	}
	return res
}

// budget spends n spans of the rate budget, or reports that the step must be skipped. The bucket
// holds a tenth of a second's worth, so the rate holds over short stretches too; a step is let
// through whenever the balance is positive (it may go into debt), so no step is too big to export.
func (x *Exporter) budget(n int) bool {
	if x.cfg.MaxRate <= 0 {
		return true
	}
	burst := x.cfg.MaxRate / 10
	now := time.Now()
	if x.refilled.IsZero() {
		x.tokens = burst
	} else {
		x.tokens = min(x.tokens+now.Sub(x.refilled).Seconds()*x.cfg.MaxRate, burst)
	}
	x.refilled = now
	if x.tokens <= 0 {
		return false
	}
	x.tokens -= float64(n)
	return true
}

func (x *Exporter) wall(ns int64) time.Time { return x.cfg.Epoch.Add(time.Duration(ns)) }

// flushStep builds and ends the spans of one step.
func (x *Exporter) flushStep(step *timeline.Event, evs []timeline.Event) {
	if !sampled(step.Aux, x.cfg.SampleRatio) {
		x.stepsSkipped.Add(1)
		return
	}
	full := x.cfg.Detail == DetailFull
	n := 1
	for i := range evs {
		if exported(&evs[i], full) {
			n++
		}
	}
	if !x.budget(n) { // decided before building anything: a skipped step costs nothing more
		x.stepsOverRate.Add(1)
		return
	}
	x.stepsKept.Add(1)
	specs := buildStep(step, evs, labelTable(x.labels), x.cfg.Scenario, Filter{MinSpanNs: x.cfg.MinSpan.Nanoseconds(), Full: full, SeqBase: x.seq})
	if full {
		x.seq += int64(len(evs))
		if step.Aux != tailStep {
			x.seq++ // the step event itself
		}
	}
	spans := make([]trace.Span, len(specs))
	for i, sp := range specs {
		ctx := context.Background()
		if sp.parent >= 0 {
			ctx = trace.ContextWithSpan(ctx, spans[sp.parent])
		}
		tracer := x.provider(sp.host).Tracer("github.com/xfertop/xfertop/otel")
		_, spans[i] = tracer.Start(ctx, sp.name, trace.WithTimestamp(x.wall(sp.start)), trace.WithAttributes(sp.attrs...))
	}
	for i, sp := range specs {
		for _, l := range sp.links {
			spans[i].AddLink(trace.Link{SpanContext: spans[l].SpanContext(), Attributes: []attribute.KeyValue{attribute.String("xfertop.link", "send-recv")}})
		}
		if sp.errMsg != "" {
			spans[i].SetStatus(codes.Error, sp.errMsg)
		}
	}
	x.addFindings(spans[0])
	// Children end before parents, so every span is complete when its parent is.
	for i := len(specs) - 1; i >= 0; i-- {
		spans[i].End(trace.WithTimestamp(x.wall(specs[i].end)))
	}
	x.built.Add(int64(len(specs)))
}

// Close exports what is left (a trailing partial step becomes a trace of its own) and shuts the
// exporter down. It waits for the collector until ctx ends or the shutdown budget
// (Config.ShutdownTimeout) is spent, whichever comes first, and gives up at once when the collector
// refuses connections; spans not exported by then are counted as dropped. With DetailFull the
// budget bounds a stall, not the wait: the export goes on as long as the collector keeps taking
// spans (or the builder keeps making them), and is given up only when neither moved for the
// budget. A slow collector then costs time, never events, as the detail promises.
func (x *Exporter) Close(ctx context.Context) error {
	if x.closed.Swap(true) {
		return nil
	}
	var cancel context.CancelFunc
	if x.cfg.Detail == DetailFull {
		ctx, cancel = stallContext(ctx, x.cfg.ShutdownTimeout, x.progress,
			fmt.Errorf("the collector took no span for %v (--otlp-shutdown-timeout)", x.cfg.ShutdownTimeout))
	} else {
		ctx, cancel = context.WithTimeoutCause(ctx, x.cfg.ShutdownTimeout,
			fmt.Errorf("the shutdown budget (%v, --otlp-shutdown-timeout) was spent", x.cfg.ShutdownTimeout))
	}
	defer cancel()
	defer x.queue.drain(ctx)()
	x.batches.Close() // the producer has stopped: the last batch waits for room rather than drop
	<-x.done
	x.flushTail()
	// Every event is folded: the metrics' last collection is the run's whole report. It is exported
	// beside the spans, within the same budget.
	var merr error
	mdone := make(chan struct{})
	go func() {
		defer close(mdone)
		if x.metrics != nil {
			merr = x.metrics.shutdown(ctx)
		}
	}()
	errs := []error{x.queue.Shutdown(ctx)}
	for _, tp := range x.hosts {
		errs = append(errs, tp.Shutdown(ctx))
	}
	<-mdone
	errs = append(errs, merr)
	// The exporter closes its connection even when ctx has ended.
	errs = append(errs, x.real.Shutdown(ctx))
	return errors.Join(errs...)
}

// progress is a count that grows while the export moves: spans built and exported, metric points
// exported.
func (x *Exporter) progress() int64 {
	n := x.built.Load() + x.queue.exported.Load()
	if m := x.metrics; m != nil {
		n += m.exported.Load()
	}
	return n
}

// stallContext is a context that ends, with cause, once progress has not changed for budget (or
// when parent ends). It checks a few times per budget, so a stall is seen within 1¼ budgets.
func stallContext(parent context.Context, budget time.Duration, progress func() int64, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(max(budget/4, time.Millisecond))
		defer tick.Stop()
		last, since := progress(), time.Now()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if p := progress(); p != last {
					last, since = p, now
				} else if now.Sub(since) >= budget {
					cancel(cause)
					return
				}
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(stop) })
		cancel(context.Canceled)
	}
}

func (x *Exporter) detail() string {
	if x.cfg.Detail == DetailFull {
		return DetailFull
	}
	return DetailSpans
}

// newSessionID returns a random id for one exporting process.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Stats returns the export's counters.
func (x *Exporter) Stats() Stats {
	q := x.queue
	s := Stats{Endpoint: ShownEndpoint(x.cfg.Endpoint, x.cfg.Protocol), Protocol: x.cfg.Protocol, SpansBuilt: x.built.Load(), SpansExported: q.exported.Load(),
		SpansDropped: q.dropped.Load(), EventsDropped: x.batches.Dropped(), StepsSampled: x.stepsKept.Load(), StepsSkipped: x.stepsSkipped.Load(),
		StepsOverRate: x.stepsOverRate.Load(), SampleRatio: x.cfg.SampleRatio, MaxRate: x.cfg.MaxRate}
	if m := x.metrics; m != nil {
		s.MetricPoints, s.MetricPointsExported, s.MetricPointsDropped = m.built.Load(), m.exported.Load(), m.dropped.Load()
	}
	if why := q.dropWhy.Load(); why != nil {
		s.DropReason = *why
	}
	switch last := q.lastErr.Load(); {
	case last != nil:
		s.State, s.Failing = "failing: "+*last, true
	case q.tried.Load():
		s.State = "ok"
	default:
		s.State = "starting"
	}
	return s
}

// ShownEndpoint is the endpoint as people write it for its protocol: a gRPC target is host:port
// ("127.0.0.1:4317", with " (TLS)" over https), not the http:// URL the SDK is given to say it is
// plaintext; an HTTP endpoint stays a URL.
func ShownEndpoint(endpoint, protocol string) string {
	if protocol == "http/protobuf" {
		return endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return endpoint
	}
	if u.Scheme == "https" {
		return u.Host + " (TLS)"
	}
	return u.Host
}

// probePort returns a fresh TCP connection attempt to the endpoint's port, or nil when the URL names
// no port.
func probePort(u *url.URL) func() error {
	if u == nil || u.Port() == "" {
		return nil
	}
	return func() error {
		c, err := net.DialTimeout("tcp", u.Host, 500*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// reconnect bounds gRPC's wait between attempts to reach a collector that went away at 1 s. gRPC's
// own backoff grows to two minutes: after a collector restart of a few seconds, the next attempt
// could come after the exporter's retries (RetryFor) have given up, dropping what a restart should
// only have delayed.
var reconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 500 * time.Millisecond,
})

// seeAttempts shows the queue each gRPC attempt: the exporter retries inside one export, so a
// refused connection can end the export at shutdown without waiting for the retries to run out.
// It also bounds each attempt by attempt (ExportTimeout). The SDK's gRPC exporters apply their
// timeout to the whole export, retries included, so it is given ExportTimeout + RetryFor, and the
// bound of one attempt is set here: with ExportTimeout alone there, a collector away for more than
// 3 s dropped the batch under way though its retries had 10 s to run.
func seeAttempts(q *spanQueue, attempt time.Duration) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if attempt > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, attempt)
			defer cancel()
		}
		err := invoke(ctx, method, req, reply, cc, opts...)
		q.attempt(err)
		return err
	})
}

// addFindings attaches the findings not yet exported to a step's root span, as events named
// xfertop.finding at the time each was found.
func (x *Exporter) addFindings(root trace.Span) {
	for _, f := range x.diag.Result(labelTable(x.labels)) {
		k := findingKey{f.Kind, f.Rank, f.Host, f.Onset}
		if x.reported[k] {
			continue
		}
		x.reported[k] = true
		attrs := []attribute.KeyValue{
			attribute.String("xfertop.finding.kind", f.Kind.String()),
			attribute.String("xfertop.finding.culprit", f.Culprit()),
			attribute.Int("xfertop.finding.rank", int(f.Rank)),
			attribute.Int64("xfertop.finding.onset_ns", f.Onset),
			attribute.Float64("xfertop.finding.confidence", f.Confidence),
			attribute.String("xfertop.finding.evidence", f.Evidence)}
		if f.Host >= 0 { // the host map's; absent, not a made-up host, where it is unknown
			attrs = append(attrs, attribute.Int("xfertop.finding.host", int(f.Host)))
		}
		root.AddEvent("xfertop.finding", trace.WithTimestamp(x.wall(f.At)), trace.WithAttributes(attrs...))
	}
}
