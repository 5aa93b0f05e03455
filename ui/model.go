package ui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	xtimeline "github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/agg"
	"github.com/xfertop/xfertop/ui/theme"
	"github.com/xfertop/xfertop/ui/views/barriers"
	"github.com/xfertop/xfertop/ui/views/cluster"
	"github.com/xfertop/xfertop/ui/views/comms"
	"github.com/xfertop/xfertop/ui/views/events"
	"github.com/xfertop/xfertop/ui/views/findings"
	"github.com/xfertop/xfertop/ui/views/idle"
	"github.com/xfertop/xfertop/ui/views/overview"
	"github.com/xfertop/xfertop/ui/views/timeline"
	"github.com/xfertop/xfertop/ui/views/transfers"
	"github.com/xfertop/xfertop/ui/widget"
	"github.com/xfertop/xfertop/units"
)

// Source is what the console shows: a live run or a replay. Implementations are safe for use from
// the console's goroutines while they produce events on their own.
type Source interface {
	Info() SourceInfo
	Snapshot() xtimeline.Snapshot
	Status() Status
	// SetSpeed changes the pace (replay); it returns false where that is not possible.
	SetSpeed(x float64) bool
	// SeekTo jumps to a time in ns (replay); it returns false where that is not possible.
	SeekTo(t int64) bool
}

// HostNamer is a live source that learns its hosts' names as it goes (attach: each rank names
// its host as it joins): the console's analysis carries them in its host map, so the cluster view,
// the findings and :host name the hosts.
type HostNamer interface {
	// HostNames returns the names of the hosts the source has learned, by host number ("" for a
	// host of no name). It is called from the console's goroutines while the source produces
	// events; the console reads it before each snapshot, so a host's name comes with its events.
	HostNames() []string
}

// InFlighter is a Source that knows which ops are running now (a backend knows what it started
// and has not finished, a replay what is under way at its position; ops are otherwise reported
// only when they end). The console asks it each tick, just before it takes the snapshot, so an op
// that ended in between is already in the snapshot and ended after it was seen running; and again
// after a snapshot of a new generation (a replay that sought).
type InFlighter interface {
	// InFlight appends the ops running now to dst and returns it, without allocating once dst has
	// room. Each is the event the op will be reported as, except that End is when it was last seen
	// running. It is called from the console's goroutines (a tick's fold runs in a command) while
	// the source produces events.
	InFlight(dst []xtimeline.Event) []xtimeline.Event
}

// Analyser is a Source that analyses every event it produces as it produces it (a replay), so
// that the console's numbers never depend on how far its drawing falls behind: a console folding
// its analysis from the window skips the events the window trimmed before it looked. The console
// then draws from the snapshot and shows the result that come together.
type Analyser interface {
	// Analysed tells the analysis the ops running now (InFlight's, so that a hang is named while
	// it lasts) and returns a snapshot and the analysis of every event produced in its
	// generation, the snapshot's included. It is called from the console's goroutines.
	Analysed(running []xtimeline.Event) (xtimeline.Snapshot, *analysis.Result)
}

// SourceInfo describes a source. The console reads it again when a new snapshot generation starts
// (a source may learn its description late: xfertop listen from its first sender, a replay of an
// import from the import's first events).
type SourceInfo struct {
	Replay   bool
	Name     string         // scenario or file
	Meta     xtimeline.Meta // the run's description: backend, topology, devices per host, link peaks
	Duration int64          // replay: the recording's length in ns
	// Recording is the file a live source records every event to, whatever the console reads of
	// them ("" when it records none): the overview names it when the view fell behind.
	Recording string
}

// ExportStatus is how the OpenTelemetry export is doing: a line for people, and whether it is
// failing (shown as a warning).
type ExportStatus struct {
	Text    string
	Failing bool
}

// Status is how a source is doing now.
type Status struct {
	Speed   float64 // 0: as fast as possible
	Done    bool
	Err     error
	Dropped int64         // events lost before reaching the console or the recording
	Export  *ExportStatus // the OpenTelemetry export's state, when exporting
	Note    string        // a line the source asks to show under the header (attach: waiting for ranks)
	Import  *ImportStatus // a replay of an import still being written: how far the import has got
	Seek    *SeekStatus   // a replay's seek under way: how far it has got (nil: none)
}

// Views, in tab order.
const (
	TabOverview = iota
	TabTimeline
	TabTransfers
	TabBarriers
	TabIdle
	TabComms
	TabEvents
	TabCluster
	TabFindings
	tabCount
)

var tabNames = [tabCount]string{"Overview", "Timeline", "Transfers", "Barriers", "Idle", "Comms", "Events", "Cluster", "Findings"}

// Minimum terminal size.
const (
	MinWidth  = 80
	MinHeight = 24
)

// DefaultTick is how often the console reads a new snapshot.
const DefaultTick = 60 * time.Millisecond

// Options configure the console.
type Options struct {
	Tick   time.Duration
	IsDark bool
}

// Model is the console's root model: the header, the tabs, the footer and the help, around the
// view shown. The views are widgets in a slice, in tab order; the root routes keys and mouse events
// to the one shown and knows nothing of their insides.
type Model struct {
	src    Source
	info   SourceInfo
	keys   widget.KeyMap
	help   help.Model
	styles theme.Styles
	// The tab line and the keys' line as last drawn.
	tabLine, footerLine lineCache
	tick                time.Duration
	tickID              int

	// rate is the simulated time achieved per wall-clock second, from the frames installed at
	// clock's times (nil: time.Now).
	rate  rate
	clock func() time.Time

	width, height int
	tab           int
	paused        bool
	seekPending   bool // a seek the replay had not taken when it was asked: paused, the next frame of a new start is still shown
	showHelp      bool

	// What is drawn, as of the last frame installed: published by the feed, never written.
	feed    *feed
	seq     uint64 // the feed's number of the frame installed
	folding bool   // a tick's fold is running
	// foldFrom is when the running fold began; busy, that it has run past slowFold, which the
	// header says (a fold of 4,096 GPUs can take seconds on a loaded machine, and a console that
	// answers nothing looks hung: keys pressed again toggle twice).
	foldFrom time.Time
	busy     bool
	snap     xtimeline.Snapshot
	state    *agg.State        // what the timeline and the log draw
	res      *analysis.Result  // every number
	devRows  widget.DeviceRows // the devices of res as the views list them (:rank)
	running  []xtimeline.Event // the ops the source had running when the snapshot was taken
	status   Status
	frames   int

	fr       *widget.Frame // what every view draws from, updated in place
	panes    []pane        // the views, in tab order
	names    []string      // their tab labels
	timeline int           // the timeline's tab (where JumpToMsg goes), -1 for none
	back     []int         // the views a jump left, most recent last: esc returns to them
	cmd      cmdLine       // the : command line
	compare  bool          // a comparison of two runs: no source to follow

	// drawn is the last frame rendered, and drawnOK says nothing it is drawn from has changed
	// since. Bubble Tea asks for a View after every message, and a tick changes nothing shown (it
	// only starts a fold): at 4,096 GPUs drawing the overview again cost a millisecond a tick, a
	// tenth of a listening console's CPU.
	drawn   string
	drawnOK bool
}

// New returns a console over src.
func New(src Source, opts Options) *Model {
	m := newRoot(src, opts, false)
	m.panes = []pane{
		&slot[*overview.Model]{overview.New(m.fr)},
		&slot[*timeline.Model]{timeline.New(m.fr)},
		&slot[*transfers.Model]{transfers.New(m.fr)},
		&slot[*barriers.Model]{barriers.New(m.fr)},
		&slot[*idle.Model]{idle.New(m.fr)},
		&slot[*comms.Model]{comms.New(m.fr)},
		&slot[*events.Model]{events.New(m.fr)},
		&slot[*cluster.Model]{cluster.New(m.fr)},
		&slot[*findings.Model]{findings.New(m.fr)},
	}
	m.names, m.timeline = tabNames[:], TabTimeline
	return m
}

// newRoot returns the root without its views.
func newRoot(src Source, opts Options, compare bool) *Model {
	if opts.Tick <= 0 {
		opts.Tick = DefaultTick
	}
	info := src.Info()
	m := &Model{src: src, info: info, keys: widget.DefaultKeyMap(), help: help.New(), styles: theme.DefaultStyles(opts.IsDark),
		tick: opts.Tick, state: agg.New(), feed: newFeed(src, info), timeline: -1, compare: compare, cmd: newCmdLine()}
	m.help.Styles = help.DefaultStyles(opts.IsDark)
	m.configureKeys()
	m.fr = &widget.Frame{Snap: &m.snap, Styles: m.styles, Keys: m.keys}
	m.syncFrame()
	return m
}

// syncFrame brings the views' Frame up to date with the root's state.
func (m *Model) syncFrame() {
	*m.fr = widget.Frame{Res: m.res, Snap: &m.snap, State: m.state, Meta: m.info.Meta, Styles: m.styles, Keys: m.keys,
		Paused: m.paused, Replay: m.info.Replay, Live: !m.status.Done && m.status.Err == nil, Running: m.running}
	_, m.fr.RunningKnown = m.src.(InFlighter)
	_, m.fr.AnalysesAll = m.src.(Analyser)
	m.fr.Recording = m.info.Recording
	m.fr.Now = m.snap.Now
	for i := range m.running {
		m.fr.Now = max(m.fr.Now, m.running[i].End)
	}
}

// configureKeys enables only the keys that work for this source.
func (m *Model) configureKeys() {
	for _, b := range []*key.Binding{&m.keys.PrevStep, &m.keys.NextStep} {
		b.SetEnabled(m.compare)
	}
	if m.compare { // one view, nothing running
		for _, b := range []*key.Binding{&m.keys.Command, &m.keys.Pause, &m.keys.NextTab, &m.keys.PrevTab, &m.keys.Tab2, &m.keys.Tab3,
			&m.keys.Tab4, &m.keys.Tab5, &m.keys.Tab6, &m.keys.Tab7, &m.keys.Tab8, &m.keys.Tab9} {
			b.SetEnabled(false)
		}
	}
	m.keys.Slower.SetEnabled(m.info.Replay)
	m.keys.Faster.SetEnabled(m.info.Replay)
	m.keys.SeekBack.SetEnabled(m.info.Replay)
	m.keys.SeekFwd.SetEnabled(m.info.Replay)
	if m.info.Replay {
		// ← and → seek in a replay; the timeline cursor keeps H and L.
		m.keys.SeekBack.SetKeys("left", "<")
		m.keys.SeekBack.SetHelp("←", "seek back")
		m.keys.SeekFwd.SetKeys("right", ">")
		m.keys.SeekFwd.SetHelp("→", "seek forward")
		m.keys.Left.SetKeys("H")
		m.keys.Left.SetHelp("H", "cursor left")
		m.keys.Right.SetKeys("L")
		m.keys.Right.SetHelp("L", "cursor right")
	} else {
		m.keys.Left.SetKeys("left", "H")
		m.keys.Right.SetKeys("right", "L")
	}
}

type tickMsg struct{ id int }

func (m *Model) scheduleTick() tea.Cmd {
	id := m.tickID
	return tea.Tick(m.tick, func(time.Time) tea.Msg { return tickMsg{id: id} })
}

// Init starts the tick (a comparison has nothing to follow).
func (m *Model) Init() tea.Cmd {
	m.refresh()
	if m.compare {
		return nil
	}
	return m.scheduleTick()
}

// refresh folds what arrived now, on the console's goroutine: for the first frame, and after the
// user resumed or sought, where the next frame must show the new state. Ticks fold in a command.
func (m *Model) refresh() { m.install(m.feed.fold()) }

// install makes fr the frame drawn, unless a newer one is.
func (m *Model) install(fr *shown) {
	if fr.seq <= m.seq {
		return
	}
	m.drawnOK = false
	m.seq, m.snap, m.state, m.res, m.info, m.status, m.running = fr.seq, fr.snap, fr.state, fr.res, fr.info, fr.status, fr.running
	m.syncFrame()
	m.rate.add(m.now(), m.fr.Now, m.status.Speed, m.snap.Generation)
}

// slowFold is how long a fold runs before the header says the console is busy with it.
const slowFold = time.Second

// now is the console's wall clock (a test's, where it sets one).
func (m *Model) now() time.Time {
	if m.clock == nil {
		return time.Now()
	}
	return m.clock()
}

// paneHas reports whether the current view uses a key itself.
func (m *Model) paneHas(b key.Binding) bool {
	for _, k := range m.panes[m.tab].ShortHelp() {
		if slices.Equal(k.Keys(), b.Keys()) {
			return true
		}
	}
	return false
}

// Result is the analysis the console shows now: the same numbers the report gives for these events.
func (m *Model) Result() *analysis.Result { return m.res }

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg.(type) {
	case tickMsg, foldedMsg: // a tick changes nothing drawn; a fold's frame does once installed (install)
	default:
		m.drawnOK = false // any other message may change what is drawn
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		for _, p := range m.panes { // the width is theirs at once; the height once the header is drawn
			p.SetSize(msg.Width, msg.Height)
		}
		return m, nil
	case tickMsg:
		if msg.id != m.tickID {
			return m, nil // a stale tick: a newer chain is running
		}
		// Paused, the fold goes on: a pause freezes what is drawn, never what is counted. A live
		// source's window trims what the console has not folded, so a fold skipped while paused
		// would lose those events from every figure for good.
		if m.folding { // a fold slower than a tick: the next tick asks again
			if !m.busy && m.now().Sub(m.foldFrom) >= slowFold {
				m.busy, m.drawnOK = true, false
			}
			return m, m.scheduleTick()
		}
		m.folding, m.foldFrom = true, m.now()
		return m, tea.Batch(m.scheduleTick(), m.feed.foldCmd())
	case foldedMsg:
		m.folding = false
		if m.busy {
			m.busy, m.drawnOK = false, false
		}
		switch {
		case !m.paused: // a fold that started before a pause is not shown
			m.install(msg.fr)
		case msg.fr.snap.Generation == m.snap.Generation:
			// Paused, the frame drawn lets go of the events the window has trimmed since: it held
			// a second window's worth once the run had gone on for the window's span. What is
			// drawn stays; an op's details that left the window say so.
			m.snap = m.snap.HeldBy(&msg.fr.snap)
			if sk := msg.fr.status.Seek; (sk == nil) != (m.status.Seek == nil) || sk != nil && *sk != *m.status.Seek {
				m.status.Seek, m.drawnOK = sk, false // a seek's progress shows paused too: never a frozen screen
			}
		case m.seekPending && msg.fr.snap.Generation != m.snap.Generation:
			// Paused, a seek shows where it went: the first frame of the replay's new start.
			m.install(msg.fr)
			m.seekPending = false
		}
		return m, nil
	case tea.MouseWheelMsg:
		if m.showHelp {
			return m, nil
		}
		return m, m.panes[m.tab].update(msg)
	case tea.MouseClickMsg:
		return m, m.click(msg)
	case tea.KeyPressMsg:
		return m.keyOrAlt(msg)
	case widget.JumpToMsg:
		if m.timeline < 0 {
			return m, nil
		}
		// The timeline owns the jump; the root shows it, and esc comes back.
		if m.tab != m.timeline {
			m.back = append(m.back, m.tab)
		}
		m.tab = m.timeline
		if tl, ok := m.timelinePane(); ok && !tl.Jump(msg) && msg.Stream == 0 {
			// A culprit that launched nothing in the events held (a hung rank, or a rank whose link
			// is the finding's) has no row: its host's GPUs are shown instead, and the footer says
			// why the culprit is not among them, whatever the finding's kind.
			host := "its host's"
			if res := tl.Fr.Res; res != nil {
				if h, ok := res.Hosts.Host(msg.Device); ok { // the one host map's, as the findings place it
					host = fmt.Sprintf("its host %d's", h)
				}
			}
			m.cmd.said, m.cmd.bad = fmt.Sprintf("rank %d has no stream in the events held (it launched nothing in them); %s GPUs are shown",
				msg.Device, host), false
		}
		return m, nil
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	// A text input that is open takes every key but the ones that close it.
	if m.cmd.open {
		return m, m.cmdKey(msg)
	}
	if p := m.panes[m.tab]; p.Capturing() {
		return m, p.update(msg)
	}
	m.cmd.said = "" // what the last command said stays until the next key
	k := m.keys
	switch {
	case key.Matches(msg, k.Command) && !m.showHelp:
		return m, m.openCmd()
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		return m, nil
	case m.showHelp && key.Matches(msg, k.Back):
		m.showHelp = false
		return m, nil
	case key.Matches(msg, k.Back) && !m.paneHas(k.Back) && len(m.back) > 0:
		// The view has no level of its own to go back to: back to the view a jump came from.
		m.tab, m.back = m.back[len(m.back)-1], m.back[:len(m.back)-1]
		return m, nil
	case key.Matches(msg, k.Pause):
		if m.paused {
			return m, m.resume()
		}
		m.paused, m.fr.Paused = true, true
		m.feed.paused.Store(true)
		return m, nil
	case key.Matches(msg, k.NextTab):
		m.tab, m.back = (m.tab+1)%len(m.panes), nil // a view chosen by hand: nothing to go back to
	case key.Matches(msg, k.PrevTab):
		m.tab, m.back = (m.tab+len(m.panes)-1)%len(m.panes), nil
	case key.Matches(msg, k.Tab1, k.Tab2, k.Tab3, k.Tab4, k.Tab5, k.Tab6, k.Tab7, k.Tab8, k.Tab9) && int(msg.String()[0]-'1') < len(m.panes):
		m.tab, m.back = int(msg.String()[0]-'1'), nil
	case key.Matches(msg, k.Slower):
		if m.status.Speed > 0 {
			m.src.SetSpeed(m.status.Speed / 2)
		}
		m.status = m.src.Status()
	case key.Matches(msg, k.Faster):
		sp := m.status.Speed * 2
		if sp == 0 {
			sp = 0 // already as fast as possible
		}
		m.src.SetSpeed(sp)
		m.status = m.src.Status()
	case key.Matches(msg, k.SeekBack), key.Matches(msg, k.SeekFwd):
		step := max(m.info.Duration/20, int64(time.Second))
		t := m.fr.Now // the position: past the last op ended while a long one runs
		if key.Matches(msg, k.SeekBack) {
			t -= step
		} else {
			t += step
		}
		m.seek(max(t, 0))
	case key.Matches(msg, k.Top) && m.info.Replay && !m.paneHas(k.Top):
		m.seek(0)
	case key.Matches(msg, k.Bottom) && m.info.Replay && !m.paneHas(k.Bottom):
		// The end as a user means it: the replay plays on to the end as fast as it can, so the
		// figures still cover the recording from where they started. A seek to the end had
		// started them there: "Moved on links 0 B since 1.07 s", every figure blank.
		m.src.SetSpeed(0)
		m.status = m.src.Status()
		return m, m.resume()
	default:
		return m, m.panes[m.tab].update(msg)
	}
	return m, nil
}

// View draws the console.
func (m *Model) View() tea.View {
	if !m.drawnOK {
		m.drawn, m.drawnOK = m.render(), true
	}
	v := tea.NewView(m.drawn)
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "xfertop: " + m.info.Name
	return v
}

func (m *Model) render() string {
	if m.width == 0 || m.height == 0 {
		return "starting xfertop…"
	}
	if m.width < MinWidth || m.height < MinHeight {
		msg := fmt.Sprintf("xfertop needs at least %d×%d;\nthis terminal is %d×%d.\nEnlarge it, or press q to quit.",
			MinWidth, MinHeight, m.width, m.height)
		return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, ansi.Wordwrap(msg, m.width, " "))
	}
	m.frames++
	header := m.header()
	tabs := m.tabs()
	footer := m.footer()
	bodyH := m.height - lipgloss.Height(header) - lipgloss.Height(tabs) - lipgloss.Height(footer)
	var body string
	if m.showHelp {
		m.help.ShowAll = true
		body = m.styles.Title.Render("Keys") + "\n\n" + m.help.View(m.fullKeys())
		m.help.ShowAll = false
	} else {
		body = m.body(m.width, bodyH)
	}
	body = fit(body, m.width, bodyH)
	return strings.Join([]string{header, tabs, body, footer}, "\n")
}

func (m *Model) body(w, h int) string {
	p := m.panes[m.tab]
	p.SetSize(w, h)
	return p.View()
}

func (m *Model) header() string {
	st := m.styles
	if m.compare {
		return ansi.Truncate(st.Header.Render("xfertop")+"  "+st.Title.Render("compare")+
			st.Muted.Render("  each figure in A and B, B − A and its change; the timelines aligned on a step"), m.width, "…")
	}
	mode := "live"
	if m.info.Replay {
		mode = "replay"
	}
	state := "▶ running"
	switch {
	case m.paused:
		state = "❚❚ paused (space resumes)"
	case m.status.Err != nil:
		state = "✖ stopped"
	case m.status.Done:
		state = "■ done"
	}
	if m.busy {
		state += " · busy: folding the events that came in"
	}
	speed := m.speedText()
	item := func(k, v string) string { return st.Muted.Render(k+" ") + st.HeaderValue.Render(v) }
	// Most important first: what is shown, its clock and state, what was lost; then the rest.
	clock := item("t", units.Dur(m.fr.Now))
	if m.info.Replay && m.info.Duration > 0 {
		// Where the replay is in the recording: position / total and a bar.
		clock = item("t", units.Dur(m.fr.Now)+" / "+units.Dur(m.info.Duration)) + " " + st.HeaderValue.Render(bar(float64(m.fr.Now)/float64(m.info.Duration)))
	}
	if m.status.Seek != nil {
		clock, state = m.seekClock(), "⏩ seeking"
		if m.paused {
			state = "❚❚ paused · ⏩ seeking"
		}
	}
	name := m.info.Name
	if m.info.Replay {
		name = filepath.Base(name) // the whole path is in the window title; the header keeps room for the clock
	}
	parts := []string{st.Header.Render("xfertop"), item(mode, name), clock, st.Title.Render(state), item("speed", speed)}
	dropped := item("dropped", fmt.Sprint(m.status.Dropped))
	if m.status.Dropped > 0 {
		dropped = st.Alert.Render(fmt.Sprintf("dropped %d", m.status.Dropped))
	}
	parts = append(parts, dropped)
	if m.snap.Trimmed > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("trimmed %d older", m.snap.Trimmed)))
	}
	if x := m.status.Export; x != nil {
		ex := st.Muted.Render(x.Text)
		if x.Failing {
			ex = st.Warn.Render(x.Text)
		}
		parts = append(parts, ex)
	}
	// A source that has not said them (listen before its first sender, a failed import) shows
	// unknown: an empty value would leave the word hanging.
	parts = append(parts, item("backend", orUnknown(m.info.Meta.Backend)), item("topology", orUnknown(m.info.Meta.Topology)))
	line := ansi.Truncate(strings.Join(parts, "  "), m.width, "…")
	if m.status.Err != nil {
		line += "\n" + ansi.Truncate(st.Alert.Render("error: "+m.status.Err.Error()+m.errRoot()), m.width, "…")
	}
	if m.status.Note != "" {
		line += "\n" + ansi.Truncate(st.Muted.Render(m.status.Note), m.width, "…")
	}
	if im := m.importLine(); im != "" {
		line += "\n" + ansi.Truncate(im, m.width, "…")
	}
	if m.res != nil && len(m.res.Findings) > 0 && !m.compare {
		fs := m.res.Findings
		// The worst finding, always in sight; the findings view (8) lists them all.
		more := ""
		if len(fs) > 1 {
			more = fmt.Sprintf(" (+%d more)", len(fs)-1)
		}
		// The finding is cut, not the key to the view that shows it whole (and its next step).
		hint := more + fmt.Sprintf(" — %d: findings", TabFindings+1)
		text := ansi.Truncate("⚠ "+fs[0].String(), max(m.width-ansi.StringWidth(hint), 1), "…")
		line += "\n" + ansi.Truncate(st.Alert.Render(text+hint), m.width, "…")
	}
	return line
}

func (m *Model) tabLabel(i int) string {
	label := fmt.Sprintf("%d %s", i+1, m.names[i])
	if i != m.tab && m.namesTooWide() {
		// Nine views on 80 columns: the others by number and the first letters of their names,
		// so every key is still on the line.
		label = fmt.Sprintf("%d %s", i+1, shortName(m.names[i]))
	}
	tab, active := m.styles.Tab, m.styles.ActiveTab
	if m.compactTabs() { // every tab on the line, a space between them rather than padding
		tab, active, label = tab.Padding(0), active.Padding(0), label+" "
		if i == m.tab {
			return active.Render(label[:len(label)-1]) + " "
		}
	}
	if i == m.tab {
		return active.Render(label)
	}
	return tab.Render(label)
}

// compactTabs reports whether the padded tab labels would not fit the width.
func (m *Model) compactTabs() bool {
	w := 0
	for i := range m.names {
		w += len(fmt.Sprintf("%d %s", i+1, m.names[i])) + 2
	}
	return w > m.width
}

// namesTooWide reports whether even unpadded, the full names of the views do not fit the width.
func (m *Model) namesTooWide() bool {
	w := 0
	for i := range m.names {
		w += len(fmt.Sprintf("%d %s ", i+1, m.names[i]))
	}
	return w > m.width
}

// shortName is a view's name cut to four letters.
func shortName(name string) string {
	if r := []rune(name); len(r) > 4 {
		return string(r[:4])
	}
	return name
}

func (m *Model) tabs() string {
	key := fmt.Sprintf("%d\x00%d\x00%s", m.tab, m.width, strings.Join(m.names, "\x00"))
	return m.tabLine.get(key, func() string {
		var parts []string
		for i := range m.names {
			parts = append(parts, m.tabLabel(i))
		}
		return ansi.Truncate(strings.Join(parts, ""), m.width, "…")
	})
}

func (m *Model) footer() string {
	if m.cmd.open || m.cmd.said != "" {
		return ansi.Truncate(m.cmdView(), m.width, "…")
	}
	keys := m.shortKeys()
	var b strings.Builder
	fmt.Fprintf(&b, "%d", m.width)
	for _, k := range keys {
		h := k.Help()
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%t", h.Key, h.Desc, k.Enabled())
	}
	return m.footerLine.get(b.String(), func() string { return ansi.Truncate(m.help.ShortHelpView(keys), m.width, "…") })
}

// lineCache is a line of the frame's chrome as last drawn, and what it was drawn from: the tab
// line and the keys' line change only with the view, the width or the keys that work, and drawing
// them (lipgloss styles each label) was a tenth of a frame over 4,096 GPUs.
type lineCache struct {
	key, text string
}

// get returns the line drawn from key, drawing it anew only when key changed since the last.
func (c *lineCache) get(key string, draw func() string) string {
	if c.key != key || c.text == "" {
		c.key, c.text = key, draw()
	}
	return c.text
}

// viewKeys are the keys that work in the current view, beyond the global ones.
func (m *Model) viewKeys() []key.Binding { return m.panes[m.tab].ShortHelp() }

// shortKeys are the keys the footer lists for the current view.
func (m *Model) shortKeys() []key.Binding {
	k := m.keys
	common := append([]key.Binding{k.Help, k.Quit, k.Command, k.Pause, k.NextTab}, m.viewKeys()...)
	if m.compare {
		common = append([]key.Binding{k.Help, k.Quit}, m.viewKeys()...)
	}
	return append(common, k.Slower, k.Faster, k.SeekBack, k.SeekFwd)
}

// fullKeys groups the keys that work now for the help screen: this view's, moving between views,
// and the session's. Keys that do nothing here are not listed.
func (m *Model) fullKeys() help.KeyMap {
	k := m.keys
	var groups [][]key.Binding
	if len(m.panes) > 1 {
		tabs := []key.Binding{k.Tab1, k.Tab2, k.Tab3, k.Tab4, k.Tab5, k.Tab6, k.Tab7, k.Tab8, k.Tab9}[:len(m.panes)]
		groups = append(groups, append(tabs, k.NextTab, k.PrevTab))
	}
	groups = append(groups, m.panes[m.tab].FullHelp()...)
	session := []key.Binding{k.Command}
	if len(m.back) > 0 && !m.paneHas(k.Back) { // esc returns to the view a jump came from
		session = append(session, k.Back)
	}
	session = append(session, k.Pause, k.Slower, k.Faster, k.SeekBack, k.SeekFwd)
	session = append(session, m.replayEnds()...)
	session = append(session, k.Help, k.Quit)
	return fullHelp(append(groups, session))
}

// replayEnds are g and G as a replay's session keys, where the view does not take them (a table
// that scrolls): g replays from the start, G plays on to the end as fast as it can.
func (m *Model) replayEnds() []key.Binding {
	k := m.keys
	if !m.info.Replay {
		return nil
	}
	var out []key.Binding
	if !m.paneHas(k.Top) {
		top := k.Top
		top.SetHelp("g", "replay from the start")
		out = append(out, top)
	}
	if !m.paneHas(k.Bottom) {
		bottom := k.Bottom
		bottom.SetHelp("G", "play to the end at full speed (the figures keep their start)")
		out = append(out, bottom)
	}
	return out
}

// fullHelp is a help screen's groups of keys.
type fullHelp [][]key.Binding

func (f fullHelp) ShortHelp() []key.Binding  { return nil }
func (f fullHelp) FullHelp() [][]key.Binding { return f }

// fit pads or cuts s to exactly w×h cells, so a view can never push the layout around.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if cellWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "…") // a cut line says so, never ends mid-number silently
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// Frames returns how many frames were drawn (for tests).
func (m *Model) Frames() int { return m.frames }

// Tab returns the current view.
func (m *Model) Tab() int { return m.tab }

// Paused reports whether the live view is paused.
func (m *Model) Paused() bool { return m.paused }

// errRoot quotes the diagnosis's root of the hang whose watchdog alert ended the run (the alert
// names the peer its op waited for, which may itself wait on the root), so that the error line
// and the findings name the same rank; "" otherwise.
func (m *Model) errRoot() string {
	if m.fr.Res == nil {
		return ""
	}
	msg := m.status.Err.Error()
	for i := range m.fr.Res.Alerts {
		if a := &m.fr.Res.Alerts[i]; a.Kind == "watchdog" && a.Root != nil && strings.HasSuffix(msg, a.Message) {
			return "; " + a.Root.Short()
		}
	}
	return ""
}

// EndedRoot is the diagnosis's root of the hang whose watchdog alert ended the run, as the
// console's error line quotes it ("root of this hang (diagnosis): rank 299 (host 37 GPU 3)"); ""
// when the run did not end so or the console found no root. The command repeats it on the line it
// leaves on the terminal after the console closes, as a headless run's.
func (m *Model) EndedRoot() string {
	if m.status.Err == nil {
		return ""
	}
	return strings.TrimPrefix(m.errRoot(), "; ")
}

// orUnknown is s, or "unknown" when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
