package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/importers/ras"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// PluginName is the NCCL profiler plugin's file name (NCCL_PROFILER_PLUGIN=xfertop finds it on
// the library path by this name).
const PluginName = "libnccl-profiler-xfertop.so"

type attachOpts struct {
	addr     attach.Addr
	headless bool
	json     bool
	text     textFlags
	record   string
	hang     time.Duration
	linger   time.Duration
	perHost  int
	console  consoleOpts
	export   *otel.Config // --otlp: the job's events exported as run and replay export theirs
	otlp     otlpFlags
	ras      string        // --ras: the job's NCCL RAS port, polled
	rasEvery time.Duration // --ras-interval
}

func attachCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("xfertop attach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, "xfertop attach [--socket PATH|tcp:HOST:PORT] [--headless [--json]] [--record FILE] [--hang-timeout D] [--otlp ENDPOINT] [--ras HOST:PORT]")
	var o attachOpts
	var otlp otlpFlags
	otlp.register(fs)
	sock := fs.String("socket", "", "listen here: a Unix socket path, or tcp:HOST:PORT (default: $XFERTOP_ATTACH, else "+attach.DefaultSocket()+"); a TCP address beyond loopback needs --expose")
	expose := fs.Bool("expose", false, "allow a --socket TCP address other hosts can reach (0.0.0.0, a NIC's address): the ranks' port has no authentication or encryption, so any host that reaches it can send events into the report; a trusted network only")
	fs.BoolVar(&o.headless, "headless", false, "print the report when the job ends instead of opening the console")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON when the job ends instead of opening the console (implies --headless)")
	o.text.register(fs)
	fs.StringVar(&o.record, "record", "", "record the job's events to this .xfr file")
	force := false
	registerForceOverwrite(fs, &force)
	fs.DurationVar(&o.hang, "hang-timeout", defaultHangTimeout, "call a collective posted by some ranks and not the others a hang after this long (the diagnosis's finding; 0: never)")
	fs.IntVar(&o.perHost, "gpus-per-host", 0, "ranks per host (rank r on host r / N) for a rank not yet heard from, named only as a peer; a rank that connected is on the host it names. 0: such a rank's host is unknown")
	fs.DurationVar(&o.linger, "linger", time.Second, "headless: the job has ended when no rank has been connected for this long")
	fs.DurationVar(&o.console.tick, "tick", 60*time.Millisecond, "console: how often the view refreshes")
	fs.IntVar(&o.console.window, "window", 0, windowUsage)
	fs.StringVar(&o.ras, "ras", "", "also poll the job's NCCL RAS port, HOST:PORT (NCCL_RAS_ADDR; "+ras.DefaultAddr+" by default): dead, missing and stuck ranks as findings")
	fs.DurationVar(&o.rasEvery, "ras-interval", ras.DefaultInterval, "how often --ras asks for the job's state (its monitor mode, where NCCL has it, tells a dead peer at once)")
	if err := parseFlags(fs, args); err != nil {
		return flagError(fs, err, stdout)
	}
	if err := checkRecordTarget(o.record, force); err != nil {
		return err
	}
	if err := o.text.check(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if o.ras != "" {
		if err := checkRASAddr(o.ras); err != nil {
			return usageError("%v", err)
		}
	}
	if *sock == "" {
		*sock = os.Getenv(attach.EnvAttach)
	}
	addr, err := attach.ParseAddr(*sock)
	if err != nil {
		return usageError("--socket: %v", err)
	}
	if !addr.Loopback() && !*expose {
		// listen refuses this without TLS and a token; the ranks' protocol has neither, so
		// only the user's explicit word opens it beyond this machine.
		return usageError("--socket %s: listens beyond this machine, and the ranks' port has no authentication: any host that reaches it "+
			"could send events into the report. Use a Unix socket or tcp:127.0.0.1:PORT (an SSH tunnel for ranks elsewhere), or give --expose on a trusted network", addr)
	}
	o.addr = addr
	o.otlp = otlp
	if o.export, err = otlp.config(); err != nil {
		return usageError("%v", err)
	}
	switch {
	case o.hang < 0:
		return usageError("--hang-timeout %v: must not be negative (0: never)", o.hang)
	case o.perHost < 0:
		return usageError("--gpus-per-host %d: must not be negative (0: a rank not yet heard from is on an unknown host)", o.perHost)
	case o.linger <= 0:
		return usageError("--linger %v: must be positive", o.linger)
	}
	if o.hang == 0 {
		o.hang = -1 // never: the server's own sign for no timeout
	}
	if err := o.console.check(); err != nil {
		return err
	}
	o.headless = o.headless || o.json // --json asks for the report, which the console does not print
	if !o.headless && !interactive(stdout) {
		headlessNotice(stderr, stdout, "")
		o.headless = true
	}
	return runAttach(ctx, o, stdout, stderr)
}

// pasteLine is what a user puts before their launcher so that every rank streams to this console.
func pasteLine(a attach.Addr) string {
	lib := "$(xfertop plugin)"
	if p, err := findPlugin(); err == nil {
		lib = p
	}
	line := "NCCL_PROFILER_PLUGIN=" + lib
	if a.String() != attach.DefaultSocket() {
		line += " " + attach.EnvAttach + "=" + a.String()
	}
	return line + " torchrun …"
}

func runAttach(ctx context.Context, o attachOpts, stdout, stderr io.Writer) error {
	strs := timeline.NewStrings()
	meta := timeline.Meta{Source: "attach " + o.addr.String(), Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
		Writer: "xfertop attach", EpochUnixNs: time.Now().UnixNano(), GPUsPerHost: o.perHost,
		// Ranks arrive as the job starts, each naming its host (NCCL's): every consumer places a
		// rank on the host it named (analysis/hostmap), before any count of GPUs per host.
		Extra: map[string]string{timeline.HostsInEventsKey: "1"}}
	var sinks []timeline.Sink
	// The diagnosis's verdicts make the report (headless) and the exit status (either way).
	an := analysis.New(meta)
	an.SetHangFloor(int64(o.hang))
	sinks = append(sinks, an)
	var win *timeline.Window
	if !o.headless {
		limit := o.console.window
		if limit == 0 {
			limit = session.AutoWindowFor(meta.Devices)
		}
		win = timeline.NewWindow(limit, strs)
		sinks = append(sinks, win)
	}
	var rec *recordings.Recorder
	if o.record != "" {
		w, err := recordings.Create(o.record)
		if err != nil {
			return failure(fmt.Errorf("--record: %w", err))
		}
		if rec, err = recordings.NewRecorder(w, strs, meta); err != nil {
			return failure(fmt.Errorf("--record: %w", err))
		}
		sinks = append(sinks, rec)
	}
	var exp *otel.Exporter
	if o.export != nil {
		ec := *o.export
		ec.Epoch, ec.Scenario, ec.Meta = time.Unix(0, meta.EpochUnixNs), "attach", meta
		x, err := otel.New(ctx, ec, strs)
		if err != nil {
			if rec != nil {
				_ = rec.Close(nil)
			}
			return usageError("--otlp: %v", err)
		}
		exp = x
		sinks = append(sinks, exp)
	}
	cfg := attach.Config{Addr: o.addr, Strings: strs, Epoch: meta.EpochUnixNs}
	var mux *rasMux
	if o.ras != "" { // the RAS poller's events join the ranks' through one door (attachras.go)
		mux = &rasMux{sinks: sinks, strs: strs, server: timeline.NewStrings()}
		cfg.Strings, sinks = mux.server, []timeline.Sink{mux}
	}
	srv, err := attach.Start(ctx, cfg, sinks...)
	if err != nil {
		if rec != nil {
			_ = rec.Close(nil)
		}
		if exp != nil {
			_ = exp.Close(context.Background())
		}
		return usageError("%v", err)
	}
	waiting := fmt.Sprintf("waiting for NCCL ranks on %s… start your job with: %s", o.addr, pasteLine(o.addr.ForRanks()))
	stopRAS := func() {}
	rasSt := &rasState{addr: o.ras}
	if o.headless {
		// The RAS poller warns from its own goroutine while this one reports the ranks.
		stderr = &lockedWriter{w: stderr}
		rasSt.warn = func(msg string) { fmt.Fprintf(stderr, "xfertop attach: warning: %s\n", msg) }
	}
	if mux != nil {
		stopRAS = startRAS(ctx, o.ras, o.rasEvery, meta.EpochUnixNs, mux, rasSt)
	}
	var cerr error
	told := map[int]rankTold{}
	if o.headless {
		fmt.Fprintf(stderr, "xfertop attach: %s\n", waiting)
		waitForJob(ctx, srv, o.linger, told, stderr)
		stopRAS()
		srv.Close()
		tellRanks(srv, told, stderr) // what the last connections said as they ended
	} else {
		info := ui.SourceInfo{Name: "attach " + o.addr.String(), Meta: srv.Meta(), Recording: o.record}
		info.Meta.GPUsPerHost = meta.GPUsPerHost
		info.Meta.Extra = maps.Clone(info.Meta.Extra)
		if info.Meta.Extra == nil {
			info.Meta.Extra = map[string]string{}
		}
		info.Meta.Extra[timeline.HostsInEventsKey] = "1"
		src := attachSource{srv: srv, win: win, waiting: waiting, info: info, exp: exp, ras: rasSt}
		if err := runConsole(ctx, src, o.console); err != nil && ctx.Err() == nil {
			cerr = failure(fmt.Errorf("console: %w", err))
		}
		stopRAS()
		srv.Close()
	}
	if rec != nil {
		if err := rec.Close([][2]string{{"ended", ""}}); err != nil && cerr == nil {
			cerr = failure(fmt.Errorf("--record: %w", err))
		}
	}
	var exported *report.Export
	if exp != nil {
		_ = exp.Close(context.Background()) // bounded by --otlp-shutdown-timeout; what it could not send is counted
		s := exp.Stats()
		exported = session.ReportExport(&s)
	}
	if cerr != nil {
		return cerr
	}
	res := an.Result(strs)
	if o.headless {
		m := srv.Meta()
		m.GPUsPerHost = o.perHost
		run := report.Run{DroppedEvents: srv.Dropped(), Export: exported}
		if p := rasSt.Problem(); p != "" {
			run.Warnings = append(run.Warnings, p)
		}
		if err := writeReport(stdout, report.Build(res, m, run), o.json, o.text.options()); err != nil {
			return err
		}
		if err := ranksDelivered(srv.Ranks(), stderr); err != nil {
			return err
		}
	}
	if n := hangFindings(res.Findings); n > 0 {
		return alertError(fmt.Errorf("%d hang finding(s): a collective posted by some ranks and not the others, ranks waiting on each other, or a rank missing or dead (the report's findings name them)", n))
	}
	return o.otlp.check(exported, stderr)
}

// rankTold is what stderr has been told of one rank connection.
type rankTold struct{ connected, failed bool }

// tellRanks tells stderr of the ranks that introduced themselves and of the connections whose
// stream failed (garbage, a checksum that does not match, a bad description), each once.
func tellRanks(srv *attach.Server, told map[int]rankTold, stderr io.Writer) {
	for _, r := range srv.Ranks() {
		t := told[r.Conn]
		if !t.connected && r.Host != "" {
			t.connected = true
			fmt.Fprintf(stderr, "xfertop attach: rank %d connected (host %s, pid %d)\n", r.Rank, r.Host, r.Pid)
		}
		if !t.failed && r.Err != "" {
			t.failed = true
			who := "" // the error names the connection ("rank connection 2: …")
			if r.Host != "" {
				who = fmt.Sprintf("rank %d (host %s, pid %d): ", r.Rank, r.Host, r.Pid)
			}
			fmt.Fprintf(stderr, "xfertop attach: %s%s (%d events taken from it)\n", who, r.Err, r.Events)
		}
		told[r.Conn] = t
	}
}

// ranksDelivered is the headless attach's verdict on its ranks: it counts the connections that
// failed, and is a data error (status 4) when no rank connected or none delivered an event.
func ranksDelivered(ranks []attach.Rank, stderr io.Writer) error {
	if len(ranks) == 0 {
		return dataError(errors.New("no rank connected"))
	}
	failed, delivered := 0, false
	for _, r := range ranks {
		if r.Err != "" {
			failed++
		}
		delivered = delivered || r.Events > 0
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "xfertop attach: %d of %d rank connections failed (their errors above)\n", failed, len(ranks))
	}
	if !delivered {
		return dataError(fmt.Errorf("no rank delivered an event (%d connections, %d failed)", len(ranks), failed))
	}
	return nil
}

// waitForJob returns when the job has ended (ranks came and all left) or ctx ends, telling stderr
// as ranks connect and leave, and as their streams fail.
func waitForJob(ctx context.Context, srv *attach.Server, linger time.Duration, told map[int]rankTold, stderr io.Writer) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		tellRanks(srv, told, stderr)
		if srv.Quiet(linger) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// attachSource is a live job's ranks as the console reads them.
type attachSource struct {
	srv     *attach.Server
	win     *timeline.Window
	waiting string
	info    ui.SourceInfo
	exp     *otel.Exporter // nil when not exporting
	ras     *rasState      // how the polls of --ras went (none polled without it)
}

func (s attachSource) Info() ui.SourceInfo         { return s.info }
func (s attachSource) HostNames() []string         { return s.srv.HostNames() }
func (s attachSource) Snapshot() timeline.Snapshot { return s.win.Snapshot() }
func (s attachSource) SetSpeed(float64) bool       { return false }
func (s attachSource) SeekTo(int64) bool           { return false }

// InFlight makes the attach console a ui.InFlighter: collectives the ranks posted and have not
// reported ended are drawn running up to now.
func (s attachSource) InFlight(dst []timeline.Event) []timeline.Event { return s.srv.InFlight(dst) }
func (s attachSource) Status() ui.Status {
	st := ui.Status{Dropped: s.srv.Dropped()}
	if s.exp != nil {
		x := s.exp.Stats()
		st.Export = exportStatus(&x)
	}
	ranks := s.srv.Ranks()
	if len(ranks) == 0 {
		st.Note = s.waiting
		if p := s.ras.Problem(); p != "" {
			st.Note = "RAS UNREACHABLE: " + p + " · " + st.Note
		}
		return st
	}
	hosts := map[string][]string{}
	var order []string
	open := 0
	for _, r := range ranks {
		if r.Connected {
			open++
		}
		if _, ok := hosts[r.Host]; !ok {
			order = append(order, r.Host)
		}
		hosts[r.Host] = append(hosts[r.Host], fmt.Sprint(r.Rank))
	}
	parts := make([]string, 0, len(order))
	for _, h := range order {
		parts = append(parts, fmt.Sprintf("%s: ranks %s", h, strings.Join(hosts[h], ",")))
	}
	st.Note = fmt.Sprintf("%d of %d ranks connected — %s", open, len(ranks), strings.Join(parts, "; "))
	if p := s.ras.Problem(); p != "" {
		st.Note = "RAS UNREACHABLE: " + p + " · " + st.Note
	}
	if open == 0 {
		st.Done = true
	}
	return st
}

// findPlugin looks for the built plugin: $XFERTOP_PLUGIN, beside the xfertop executable, then in
// the current directory.
func findPlugin() (string, error) {
	var tried []string
	if p := os.Getenv("XFERTOP_PLUGIN"); p != "" {
		tried = append(tried, p)
	}
	if exe, err := os.Executable(); err == nil {
		tried = append(tried, filepath.Join(filepath.Dir(exe), PluginName))
	}
	if wd, err := os.Getwd(); err == nil {
		tried = append(tried, filepath.Join(wd, PluginName))
	}
	tried = uniquePaths(tried)
	for _, p := range tried {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (looked at %s)", PluginName, strings.Join(tried, ", "))
}

// uniquePaths is paths without the repeats of one file (run from the directory that holds the
// binary, the binary's directory and the working directory are one): each is named once.
func uniquePaths(paths []string) []string {
	seen := map[string]bool{}
	out := paths[:0:0]
	for _, p := range paths {
		k := filepath.Clean(p)
		if abs, err := filepath.Abs(p); err == nil {
			k = abs
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

const pluginHelp = `Usage: xfertop plugin

Prints the path of the NCCL profiler plugin that xfertop attach needs (` + PluginName + `):
the file named by XFERTOP_PLUGIN, else the one beside the xfertop binary, else the one in the
working directory. When there is none, it says where it looked and how to build it. Give it to
the job as NCCL_PROFILER_PLUGIN=$(xfertop plugin) (see docs/attach.md).
`

func pluginCmd(args []string, stdout io.Writer) error {
	if isHelp(args) {
		fmt.Fprint(stdout, pluginHelp+exitHelp)
		return nil
	}
	if len(args) > 0 {
		return usageError("takes no arguments")
	}
	p, err := findPlugin()
	if err == nil {
		fmt.Fprintln(stdout, p)
		return nil
	}
	dir := "."
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	return failure(fmt.Errorf(`%v
Build it (needs cgo and a C compiler) from the xfertop source tree:
  go build -buildmode=c-shared -o %s ./probes/ncclprof
then run your job with NCCL_PROFILER_PLUGIN=$(xfertop plugin) (see docs/attach.md)`, err, filepath.Join(dir, PluginName)))
}

// defaultHangTimeout is how long attach lets a collective be posted by some ranks and not the
// others before the diagnosis calls it a hang: longer than the simulator's 1 s, as a real job's
// ranks drift apart more (PyTorch's own NCCL timeout is minutes).
const defaultHangTimeout = 30 * time.Second

// hangFindings counts the findings that say the job stopped: hangs, missing ranks, deadlocks.
func hangFindings(fs []diagnosis.Finding) int {
	n := 0
	for i := range fs {
		switch fs[i].Kind {
		case diagnosis.Hang, diagnosis.MissingRank, diagnosis.Deadlock, diagnosis.DeadRank:
			n++
		}
	}
	return n
}
