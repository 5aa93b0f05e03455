package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/term"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/importers"
	"github.com/xfertop/xfertop/otel"
	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui"
)

// consoleOpts are the flags only the console uses.
type consoleOpts struct {
	tick   time.Duration
	window int
}

// windowUsage is --window's help: what its default holds, so that a user can tell whether a
// finding's evidence will still be in memory when they look.
var windowUsage = func() string {
	most := timeline.AutoWindow(1<<20, 0)
	perGPU := timeline.EventsPerGPUSecond * timeline.AutoWindowSeconds
	return fmt.Sprintf("console: events kept in memory; older ones are trimmed, a recording keeps all "+
		"(0: sized to the job's GPUs: a minute of llm-train's ~%d events a GPU a simulated second, at least %d events, "+
		"at most %d (2 GiB of ~%d bytes an event: from %d GPUs up, ~%.1f s of llm-train at 1,024) or a quarter of the machine's memory)",
		timeline.EventsPerGPUSecond, timeline.DefaultWindow, most, timeline.HeldEventBytes,
		(most+perGPU-1)/perGPU, float64(most)/(1024*timeline.EventsPerGPUSecond))
}()

// minTick is the shortest --tick: a terminal shows no more than about 60 frames a second, and a
// shorter refresh only burns CPU (1 ns took more than a core).
const minTick = 10 * time.Millisecond

// check refuses a refresh interval or a window that cannot work, naming the flag.
func (o consoleOpts) check() error {
	if o.tick < minTick {
		return usageError("--tick %v: must be at least %v (the terminal draws no faster)", o.tick, minTick)
	}
	if o.window < 0 {
		return usageError("--window %d: must be positive (or 0: sized to the job)", o.window)
	}
	return nil
}

// interactive reports whether the console can run (see consoleWhy).
func interactive(stdout io.Writer) bool { return notInteractive(stdout) == "" }

// notInteractive says why the console cannot run on stdout, "" when it can.
func notInteractive(stdout io.Writer) string {
	f, ok := stdout.(*os.File)
	outTerm := ok && term.IsTerminal(f.Fd())
	inTerm := term.IsTerminal(os.Stdin.Fd())
	return consoleWhy(outTerm, inTerm, !outTerm || inTerm || ttyReadable())
}

// consoleWhy says why the console cannot run, "" when it can. It draws on standard output, which
// must be a terminal; its keys come from standard input or, where that is a pipe (`cat trace |
// xfertop replay -`), from the controlling terminal (/dev/tty), as less and fzf read theirs (Bubble
// Tea opens it when standard input is not a terminal).
func consoleWhy(outTerm, inTerm, ttyOK bool) string {
	switch {
	case !outTerm:
		return "standard output is not a terminal"
	case !inTerm && !ttyOK:
		return "standard input is not a terminal, and there is no terminal (/dev/tty) to read keys from"
	}
	return ""
}

// ttyReadable reports whether this process has a controlling terminal to read keys from.
func ttyReadable() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer f.Close()
	return term.IsTerminal(f.Fd())
}

// headlessNotice tells the user that the report is printed instead of the console, and why;
// when is "" or " at the end" (listen prints it when it stops).
func headlessNotice(stderr, stdout io.Writer, when string) {
	why := notInteractive(stdout)
	if why == "" {
		why = "the console cannot run here"
	}
	fmt.Fprintf(stderr, "xfertop: %s: printing the headless report%s (use --headless to say so)\n", why, when)
}

type liveSource struct {
	l    *session.Live
	info ui.SourceInfo
}

func (s liveSource) Info() ui.SourceInfo         { return s.info }
func (s liveSource) Snapshot() timeline.Snapshot { return s.l.Snapshot() }
func (s liveSource) SetSpeed(float64) bool       { return false }
func (s liveSource) SeekTo(int64) bool           { return false }

// InFlight makes the live console a ui.InFlighter: the backend's running ops are drawn up to now.
func (s liveSource) InFlight(dst []timeline.Event) []timeline.Event { return s.l.InFlight(dst) }

func (s liveSource) Status() ui.Status {
	return ui.Status{Speed: s.l.Speed(), Done: s.l.Done(), Err: s.l.Err(), Dropped: s.l.Dropped(), Export: exportStatus(s.l.ExportStats())}
}

// exportStatus is the header's line for an OTLP export; nil when not exporting.
func exportStatus(x *otel.Stats) *ui.ExportStatus {
	if x == nil {
		return nil
	}
	return &ui.ExportStatus{Text: fmt.Sprintf("otlp %s: %d exported, %d dropped", x.State, x.SpansExported, x.SpansDropped+x.EventsDropped),
		Failing: x.Failing}
}

type replaySource struct {
	r    *session.ReplaySource
	info ui.SourceInfo
	imp  *backgroundImport // the import writing the recording, while the console replays it
}

// Info describes the replay: a recording still being imported is described once its first events
// are written (the console reads it again then), and its length grows.
func (s replaySource) Info() ui.SourceInfo {
	info := s.info
	info.Meta, info.Duration = s.r.Description()
	return info
}

func (s replaySource) Snapshot() timeline.Snapshot { return s.r.Snapshot() }

// InFlight makes the replay a ui.InFlighter: the ops under way at the replay's position are drawn
// up to it, as a live run's are up to now.
func (s replaySource) InFlight(dst []timeline.Event) []timeline.Event { return s.r.InFlight(dst) }

// Analysed makes the replay a ui.Analyser: the replay analyses every event it emits, so the
// console's numbers are the report's however far its drawing falls behind.
func (s replaySource) Analysed(running []timeline.Event) (timeline.Snapshot, *analysis.Result) {
	return s.r.Analysed(running)
}

func (s replaySource) SetSpeed(x float64) bool { s.r.SetSpeed(x); return true }
func (s replaySource) SeekTo(t int64) bool     { s.r.SeekTo(t); return true }
func (s replaySource) Status() ui.Status {
	st := ui.Status{Speed: s.r.Speed(), Done: s.r.Done(), Err: s.r.Err(), Dropped: s.r.Dropped()}
	if hint := salvageHint("replay", st.Err); hint != "" {
		st.Err = fmt.Errorf("%w%s", st.Err, hint) // the way past the damage, as the headless message says it
	}
	if s.imp != nil {
		im := s.imp.status()
		st.Import = &im
	}
	if sk, ok := s.r.Seeking(); ok {
		st.Seek = &ui.SeekStatus{To: sk.To, Done: sk.Done, Total: sk.Total, Unit: sk.Unit}
	}
	return st
}

// runConsole runs the console until the user quits or ctx is done (SIGINT, SIGTERM, SIGHUP). Bubble Tea
// restores the terminal on the way out, after a panic too.
//
// Signals are main's alone (ctx): Bubble Tea's own handler would race with the context, and when the
// context wins, its handler blocks for ever sending a quit message that nobody reads while Run waits
// for it (bubbletea v2.0.2, tea.go handleSignals): the console then hangs on SIGTERM.
func runConsole(ctx context.Context, src ui.Source, o consoleOpts) error {
	_, err := runConsoleModel(ctx, src, o)
	return err
}

// runConsoleModel is runConsole, returning the console's model as it was when it closed.
func runConsoleModel(ctx context.Context, src ui.Source, o consoleOpts) (*ui.Model, error) {
	m := ui.New(src, ui.Options{Tick: o.tick, IsDark: darkTerminal()})
	return m, runProgram(ctx, m)
}

// runProgram runs a console model until the user quits or ctx is done, signals left to ctx (see
// runConsole).
func runProgram(ctx context.Context, m tea.Model) error {
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithoutSignalHandler()).Run()
	return err
}

// consoleRunEnded is runEnded for a run the console showed: a run a watchdog alert ended gets the
// root of the hang the console found, as a headless run's line has it from its report (the line
// left on the terminal is the one pasted into a ticket).
func consoleRunEnded(out session.Outcome, err error, root string) error {
	if err == nil && out.EndedByAlert() && root != "" {
		return alertError(fmt.Errorf("the run ended early: %w; %s", out.Ended, root))
	}
	return runEnded(out, err, nil)
}

// darkTerminal reports whether the terminal's background is dark.
func darkTerminal() bool {
	in := os.Stdin
	if !term.IsTerminal(in.Fd()) { // keys come from /dev/tty (consoleWhy): ask it, not the pipe
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			in = tty
		}
	}
	return lipgloss.HasDarkBackground(in, os.Stdout)
}

func liveConsole(ctx context.Context, cfg session.Config, o consoleOpts, otlp *otlpFlags, stderr io.Writer) error {
	if cfg.Steps == 0 && cfg.Duration == 0 {
		cfg.Steps = math.MaxInt32 // like top: run until the user quits
	}
	cfg.Window = o.window
	l, err := session.StartLive(ctx, cfg)
	if err != nil {
		return prepareError(err)
	}
	m := l.Meta()
	info := ui.SourceInfo{Name: m.Scenario, Meta: m, Recording: cfg.Record}
	model, cerr := runConsoleModel(ctx, liveSource{l: l, info: info}, o)
	out, rerr := l.Stop()
	if cerr != nil && ctx.Err() == nil {
		return failure(fmt.Errorf("console: %w", cerr))
	}
	if err := consoleRunEnded(out, rerr, model.EndedRoot()); err != nil {
		return err
	}
	return otlp.check(session.ReportExport(l.ExportStats()), stderr)
}

func replayConsole(ctx context.Context, cfg session.ReplayConfig, o consoleOpts) error {
	return openReplay(ctx, cfg, o.window, func(src ui.Source) error { return runConsole(ctx, src, o) })
}

// openReplay replays a recording into the console that run shows. What stopped the replay (damage
// met part way) is the command's error once the console is closed, as it is a headless replay's:
// the same exit status and message.
func openReplay(ctx context.Context, cfg session.ReplayConfig, window int, run func(ui.Source) error) error {
	rs, err := session.StartReplay(ctx, cfg, window)
	if err != nil {
		return err // a damaged recording is a data error (exitStatus)
	}
	defer rs.Stop()
	info := ui.SourceInfo{Replay: true, Name: cfg.Path, Meta: rs.Meta, Duration: rs.Duration}
	if err := run(replaySource{r: rs, info: info}); err != nil && ctx.Err() == nil {
		return failure(fmt.Errorf("console: %w", err))
	}
	return rs.Err()
}

// importConsole opens the console on traces or exports at once, instead of after importing them
// whole: the import writes a temporary recording in the background, and the console replays it
// as it grows, with the import's progress under its header; seeking stays within what is
// imported. Quitting stops the import and removes the recording. An import that fails at once
// (not an export, a missing table) is reported before the console opens, as it always was; one
// that fails later shows its error in the console, keeps what it imported, and is the command's
// error once the console is closed.
func importConsole(ctx context.Context, paths []string, opts importers.Options, cfg session.ReplayConfig, o consoleOpts, stderr io.Writer) error {
	return openImport(ctx, paths, opts, cfg, o.window, importHooks{}, stderr, func(src ui.Source) error { return runConsole(ctx, src, o) })
}

// openImport starts importing paths and a replay that follows the import, runs the console (run)
// over them, then stops both and removes the temporary recording.
func openImport(ctx context.Context, paths []string, opts importers.Options, cfg session.ReplayConfig, window int, hooks importHooks,
	stderr io.Writer, run func(ui.Source) error) (err error) {
	b, err := startImport(ctx, paths, opts, hooks)
	if err != nil {
		return err
	}
	defer func() {
		// Last: the import's recording is removed, and its error is the command's unless the
		// console's own came first.
		if ierr := b.stop(stderr); err == nil {
			err = ierr
		}
	}()
	if err := b.waitReady(ctx); err != nil {
		return nil // interrupted (main says so), or the import failed at once: stop returns why
	}
	cfg.Path, cfg.Growth = b.path, b.growth
	rs, err := session.StartReplay(ctx, cfg, window)
	if err != nil {
		return err
	}
	defer rs.Stop()     // before the import stops: the replay reads the recording the import removes
	name := opts.Source // the directory the user gave, not the temporary recording nor the dumps in it
	if name == "" {
		name = listNames(paths)
	}
	if err := run(replaySource{r: rs, info: ui.SourceInfo{Replay: true, Name: name}, imp: b}); err != nil && ctx.Err() == nil {
		return failure(fmt.Errorf("console: %w", err))
	}
	return nil
}
