package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/fileerr"
	"github.com/xfertop/xfertop/receiver"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
	"github.com/xfertop/xfertop/units"
)

type listenOpts struct {
	cfg       receiver.Config
	force     bool // --force-overwrite: --record may replace a file
	tokenFile string
	headless  bool
	json      bool
	text      textFlags
	record    string
	idle      time.Duration
	console   consoleOpts
	maxBytes  sizeValue
}

func listenFlags(stderr io.Writer) (*flag.FlagSet, *listenOpts) {
	o := &listenOpts{}
	fs := flag.NewFlagSet("xfertop listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop listen [--grpc ADDR] [--http ADDR] [--headless [--json]] [--record FILE] [--exit-after-idle D]")
	fs.StringVar(&o.cfg.GRPC, "grpc", receiver.DefaultGRPC, "OTLP/gRPC address (\"\": none); not loopback only with --tls-cert, --tls-key and --auth-token-file")
	fs.StringVar(&o.cfg.HTTP, "http", receiver.DefaultHTTP, "OTLP/HTTP address (\"\": none); not loopback only with --tls-cert, --tls-key and --auth-token-file")
	fs.StringVar(&o.cfg.TLSCert, "tls-cert", "", "TLS certificate (PEM): serve TLS only")
	fs.StringVar(&o.cfg.TLSKey, "tls-key", "", "TLS private key (PEM)")
	fs.StringVar(&o.tokenFile, "auth-token-file", "", "file holding the bearer token every request must carry (Authorization: Bearer TOKEN)")
	o.maxBytes.n = receiver.DefaultMaxMessageBytes
	fs.Var(&o.maxBytes, "max-message-bytes", "refuse a request larger than this, after decompression")
	fs.IntVar(&o.cfg.MaxSpansPerRequest, "max-spans-per-request", receiver.DefaultMaxSpans, "refuse a request holding more spans than this")
	fs.IntVar(&o.cfg.QueueSpans, "queue-spans", receiver.DefaultQueueSpans, "spans waiting to be merged; past it senders are asked to retry (gRPC ResourceExhausted, HTTP 429)")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", receiver.DefaultMaxConns, "connections open at once, gRPC and HTTP together; past it a new one is closed at once and logged")
	fs.DurationVar(&o.cfg.MaxConnIdle, "conn-idle-timeout", receiver.DefaultMaxConnIdle, "close a connection that carried no request for this long (the sender reconnects when it has data)")
	fs.DurationVar(&o.cfg.ReorderWait, "reorder-wait", receiver.DefaultReorderWait, "how long a missing event holds back those after it before it is counted lost")
	fs.BoolVar(&o.headless, "headless", false, "print a report at the end instead of opening the console")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON at the end instead of opening the console (implies --headless)")
	o.text.register(fs)
	fs.StringVar(&o.record, "record", "", "record what is received to this .xfr file")
	registerForceOverwrite(fs, &o.force)
	fs.DurationVar(&o.idle, "exit-after-idle", 0, "headless: end when no data has come for this long (0: run until SIGINT or SIGTERM)")
	fs.DurationVar(&o.console.tick, "tick", 60*time.Millisecond, "console: how often the view refreshes")
	fs.IntVar(&o.console.window, "window", 0, windowUsage)
	return fs, o
}

func listenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := listenFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return flagError(fs, err, stdout)
	}
	if err := checkRecordTarget(o.record, o.force); err != nil {
		return err
	}
	if err := o.text.check(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if o.idle < 0 {
		return usageError("--exit-after-idle %v: must not be negative", o.idle)
	}
	if err := o.console.check(); err != nil {
		return err
	}
	switch {
	case o.cfg.QueueSpans <= 0:
		return usageError("--queue-spans %d: must be positive", o.cfg.QueueSpans)
	case o.cfg.MaxSpansPerRequest <= 0:
		return usageError("--max-spans-per-request %d: must be positive", o.cfg.MaxSpansPerRequest)
	case o.cfg.MaxConns <= 0:
		return usageError("--max-conns %d: must be positive", o.cfg.MaxConns)
	case o.cfg.MaxConnIdle <= 0:
		return usageError("--conn-idle-timeout %v: must be positive", o.cfg.MaxConnIdle)
	case o.cfg.ReorderWait < 0:
		return usageError("--reorder-wait %v: must not be negative", o.cfg.ReorderWait)
	}
	o.cfg.MaxMessageBytes = int(min(o.maxBytes.n, 1<<31-1))
	if o.tokenFile != "" {
		// A token is tens of bytes; the bound keeps /dev/zero or an endless FIFO out of memory.
		b, err := fileerr.ReadBounded(o.tokenFile, "token file", 64<<10)
		if err != nil {
			return usageError("--auth-token-file: %v", err)
		}
		if o.cfg.Token = strings.TrimSpace(string(b)); o.cfg.Token == "" {
			return usageError("--auth-token-file %s is empty", o.tokenFile)
		}
	}
	if err := o.cfg.Check(); err != nil {
		return usageError("%w", err)
	}
	o.headless = o.headless || o.json // --json asks for the report, which the console does not print
	if !o.headless && !interactive(stdout) {
		headlessNotice(stderr, stdout, " at the end")
		o.headless = true
	}
	logs := &lineLog{w: stderr}
	o.cfg.Logf = func(format string, a ...any) { logs.printf("xfertop listen: "+format, a...) }
	if o.headless {
		return listenHeadless(ctx, o, stdout, logs)
	}
	return listenConsole(ctx, o, logs)
}

// createRecording creates the --record file; tests put a writer that fails in its place.
var createRecording = recordings.Create

// lineLog writes whole lines from any goroutine.
type lineLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineLog) printf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", a...)
}

// sinks are what the received events go to: the analysis or the console's window, and the recording.
type listenSinks struct {
	strs     *timeline.Strings
	record   string
	logs     *lineLog
	analyzer *analysis.Analyzer // headless
	window   *timeline.Window   // console
	recorder *recordings.Recorder
	meta     timeline.Meta
	metaSet  chanOnce

	// The hosts' names as their senders gave them (receiver: host.name), by number, for the
	// console's analysis (listenSource.HostNames), from the listener's goroutine.
	namesMu sync.Mutex
	names   []string

	// The recording's failure, from any goroutine: once set, no request is acknowledged (gate).
	failMu   sync.Mutex
	failErr  error
	created  bool          // the failure is the file's creation (nothing was recorded)
	failed   chan struct{} // closed at the failure
	stopWait chan struct{} // closed when the recording is closed: the failure watcher ends
}

func newListenSinks(o *listenOpts, logs *lineLog) *listenSinks {
	s := &listenSinks{strs: timeline.NewStrings(), record: o.record, logs: logs, metaSet: chanOnce{ch: make(chan struct{})},
		failed: make(chan struct{}), stopWait: make(chan struct{})}
	o.cfg.Gate = s.gate
	return s
}

// gate refuses requests once the recording has failed: they could not be kept.
func (s *listenSinks) gate() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failErr
}

// fail records the recording's failure and says so at once.
func (s *listenSinks) fail(err error, create bool) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failErr != nil {
		return
	}
	s.failErr, s.created = rootCause(err), create
	close(s.failed)
	what := "cannot be written"
	if create {
		what = "cannot be created"
	}
	s.logs.printf("xfertop listen: --record %s %s (%v): no longer acknowledging requests (senders are answered unavailable and keep their data); the report covers what was taken before", s.record, what, s.failErr)
}

// failure is the recording's failure (nil when none), and whether it was the file's creation.
func (s *listenSinks) failure() (error, bool) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failErr, s.created
}

// rootCause is the innermost error of a chain: "no space left on device", without the layers.
func rootCause(err error) error {
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return err
}

type chanOnce struct {
	once sync.Once
	ch   chan struct{}
}

// onMeta is called on the listener's goroutine with the first sender's description.
func (s *listenSinks) onMeta(m timeline.Meta) timeline.Sink {
	s.meta = m
	var sinks multiSink
	if s.window != nil {
		sinks = append(sinks, s.window)
	} else {
		s.analyzer = analysis.New(m)
		sinks = append(sinks, s.analyzer)
	}
	if s.record != "" {
		w, err := createRecording(s.record)
		if err == nil {
			var rec *recordings.Recorder
			if rec, err = recordings.NewRecorder(w, s.strs, m); err == nil {
				s.recorder = rec
				sinks = append(sinks, rec)
				go func() {
					select {
					case <-rec.Failed():
						s.fail(rec.Err(), false)
					case <-s.stopWait:
					}
				}()
			}
		}
		if err != nil {
			s.fail(err, true)
		}
	}
	s.metaSet.once.Do(func() { close(s.metaSet.ch) })
	return namingSinks{sinks, s}
}

// NameHost keeps a host's name for the console (timeline.HostNamer).
func (s *listenSinks) NameHost(h int32, name string) {
	if h < 0 || int(h) >= analysis.MaxDevices {
		return
	}
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	names := slices.Clone(s.names) // HostNames hands the slice out: a new one, not written again
	if int(h) >= len(names) {
		names = append(names, make([]string, int(h)+1-len(names))...)
	}
	names[h] = name
	s.names = names
}

// hostNames returns the hosts' names the senders gave, by number ("" for none).
func (s *listenSinks) hostNames() []string {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	return s.names
}

type multiSink []timeline.Sink

func (m multiSink) Emit(e *timeline.Event) {
	for _, s := range m {
		s.Emit(e)
	}
}

// NameHost hands a host's name to the sinks that take names (timeline.HostNamer).
func (m multiSink) NameHost(h int32, name string) {
	for _, s := range m {
		if n, ok := s.(timeline.HostNamer); ok {
			n.NameHost(h, name)
		}
	}
}

// namingSinks is the listener's sinks and the console's keeper of host names.
type namingSinks struct {
	multiSink
	keep *listenSinks
}

// NameHost hands a host's name to the sinks and keeps it for the console.
func (n namingSinks) NameHost(h int32, name string) {
	n.multiSink.NameHost(h, name)
	n.keep.NameHost(h, name)
}

// listenAddrs describes what a listener serves, for people.
func listenAddrs(l *receiver.Listener) string {
	var parts []string
	if a := l.GRPCAddr(); a != nil {
		parts = append(parts, "grpc "+a.String())
	}
	if a := l.HTTPAddr(); a != nil {
		parts = append(parts, "http "+a.String())
	}
	return strings.Join(parts, ", ")
}

func listenHeadless(ctx context.Context, o *listenOpts, stdout io.Writer, logs *lineLog) error {
	sinks := newListenSinks(o, logs)
	l, err := receiver.Listen(o.cfg, sinks.strs, sinks.onMeta)
	if err != nil {
		return listenError(err)
	}
	logs.printf("xfertop listen: receiving OTLP on %s", listenAddrs(l))
	// A recording that fails ends a headless listen, as it stops a run: nothing more can be kept.
	ended := waitListen(ctx, l, o.idle, sinks.failed)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.Close(closeCtx)
	recErr := closeListenRecording(sinks, l)
	if sinks.analyzer == nil {
		if recErr != nil {
			return recErr
		}
		if ended != nil {
			return nil // interrupted before any sender came: nothing to report (finish says so)
		}
		return dataError(fmt.Errorf("no xfertop spans came in %v (%s): %w", o.idle, listenAddrs(l), session.ErrNoEvents))
	}
	// What was taken is reported whatever became of the recording, as run --record does.
	if err := writeReport(stdout, listenReport(l, sinks), o.json, o.text.options()); err != nil {
		return err
	}
	return recErr
}

// waitListen waits for ctx to end, for failed to close or, with idle > 0, for idle to pass
// without data.
func waitListen(ctx context.Context, l *receiver.Listener, idle time.Duration, failed <-chan struct{}) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-failed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			if idle > 0 && l.Idle(now) >= idle {
				return nil
			}
		}
	}
}

// closeListenRecording closes the recording and says what became of it: nil when it was kept
// whole, the command's failure when it could not be created or written.
func closeListenRecording(s *listenSinks, l *receiver.Listener) error {
	defer close(s.stopWait)
	if s.recorder != nil {
		t := l.Totals()
		if err := s.recorder.Close([][2]string{{"received", fmt.Sprint(t.Spans)}, {"lost", fmt.Sprint(t.Lost)}}); err != nil {
			s.fail(err, false)
		}
	}
	switch err, create := s.failure(); {
	case err == nil:
		return nil
	case create:
		return failure(fmt.Errorf("--record %s: cannot create the recording: %v", s.record, err))
	default:
		return failure(fmt.Errorf("--record %s: %v; listen stopped acknowledging at that point (senders were answered unavailable and keep their data), and the recording keeps every chunk completed before it", s.record, err))
	}
}

// listenReport is the report of what was received: every number from the analysis of the merged
// stream, the receiver's counts beside it.
func listenReport(l *receiver.Listener, s *listenSinks) *report.Report {
	t := l.Totals()
	m := s.meta
	m.Source = "otlp " + t.HostNames()
	run := report.Run{DroppedEvents: t.Lost, Partial: t.Partial, Receive: &report.Receive{Listen: listenAddrs(l), Spans: t.Spans,
		Foreign: t.Foreign, Lost: t.Lost, Duplicates: t.Duplicates, Refused: t.Refused, Rejected: t.Rejected, Invalid: t.Invalid, OtherJobs: t.OtherJobs}}
	for _, h := range t.Hosts {
		run.Receive.Hosts = append(run.Receive.Hosts, report.ReceiveHost{Name: h.Name, Session: h.Session, Detail: h.Detail, Spans: h.Spans, OffsetNs: h.OffsetNs})
	}
	return report.Build(s.analyzer.Result(s.strs), m, run)
}

// listenError maps the receiver's errors: a refused configuration is a usage error; an address
// that cannot be bound a failure.
func listenError(err error) error {
	var ce *receiver.ConfigError
	if errors.As(err, &ce) {
		return usageError("%w", err)
	}
	return failure(err)
}

// listenSource adapts a listener to the console.
type listenSource struct {
	l     *receiver.Listener
	win   *timeline.Window
	sinks *listenSinks
	addrs string
}

func (s *listenSource) Info() ui.SourceInfo {
	info := ui.SourceInfo{Name: "otlp", Recording: s.sinks.record}
	select {
	case <-s.sinks.metaSet.ch:
		info.Meta = s.sinks.meta
	default:
	}
	return info
}

func (s *listenSource) Snapshot() timeline.Snapshot { return s.win.Snapshot() }
func (s *listenSource) HostNames() []string         { return s.sinks.hostNames() }
func (s *listenSource) SetSpeed(float64) bool       { return false }
func (s *listenSource) SeekTo(int64) bool           { return false }
func (s *listenSource) Status() ui.Status {
	t := s.l.Totals()
	var hosts []string
	for _, h := range t.Hosts {
		hosts = append(hosts, hostClock(h))
	}
	src := "waiting for senders on " + s.addrs
	if len(hosts) > 0 {
		src = fmt.Sprintf("sources %d (%s)", len(hosts), strings.Join(hosts, ", "))
	}
	line := fmt.Sprintf("%s · %.0f spans/s · lost %d · refused %d · rejected %d", src, t.SpansPerSec, t.Lost, t.Refused, t.Rejected)
	if t.Invalid > 0 {
		line += fmt.Sprintf(" · invalid %d", t.Invalid)
	}
	if len(t.Partial) > 0 {
		line += " · partial (" + partialDetail(t.Hosts) + ")"
	}
	if n := len(t.OtherJobs); n > 0 {
		// A run after the first into this listener: its figures are not mixed in, and the user
		// must know why its steps do not appear.
		line = fmt.Sprintf("ANOTHER JOB LEFT OUT (%d; %s) · %s", n, t.OtherJobs[n-1], line)
	}
	if err, _ := s.sinks.failure(); err != nil {
		line = fmt.Sprintf("RECORDING FAILED (%v): senders answered unavailable · %s", err, line)
	}
	return ui.Status{Dropped: t.Lost, Note: line}
}

// hostClock names a sending host with the estimate of its clock's offset from this one (the
// report's clock offset), unknown until it has sent a span.
func hostClock(h receiver.Host) string {
	off := units.Unknown
	if h.Spans > 0 {
		off = units.Dur(h.OffsetNs)
	}
	return fmt.Sprintf("%s clock offset ≈ %s", h.Name, off)
}

func listenConsole(ctx context.Context, o *listenOpts, logs *lineLog) error {
	// Log lines would write over the console: what they say is counted in its header instead.
	logs.w = io.Discard
	src, err := startListenSource(o, logs)
	if err != nil {
		return listenError(err)
	}
	cerr := runConsole(ctx, src, o.console)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = src.l.Close(closeCtx)
	if err := closeListenRecording(src.sinks, src.l); err != nil {
		return err
	}
	if cerr != nil && ctx.Err() == nil {
		return failure(fmt.Errorf("console: %w", cerr))
	}
	return nil
}

// startListenSource starts the listener and the console's window it fills.
func startListenSource(o *listenOpts, logs *lineLog) (*listenSource, error) {
	sinks := newListenSinks(o, logs)
	sinks.window = timeline.NewWindow(o.console.window, sinks.strs)
	l, err := receiver.Listen(o.cfg, sinks.strs, func(m timeline.Meta) timeline.Sink {
		s := sinks.onMeta(m)
		if o.console.window == 0 { // sized to the job, now that its sender says how large it is
			sinks.window.SetLimit(session.AutoWindowFor(m.Devices))
		}
		// A new generation before the first event: the console reads the sender's description
		// (Info) again and starts its analysis with it.
		sinks.window.SetGeneration(1)
		return s
	})
	if err != nil {
		return nil, err
	}
	return &listenSource{l: l, win: sinks.window, sinks: sinks, addrs: listenAddrs(l)}, nil
}

// partialDetail says why a listen's data is partial, as the senders said it: "detail spans", or
// "detail unknown" when a sender did not say its detail (report.receivePartialWhy's words).
func partialDetail(hosts []receiver.Host) string {
	for _, h := range hosts {
		if h.Detail == "" {
			return "detail unknown"
		}
	}
	return "detail spans"
}
