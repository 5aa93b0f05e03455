package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/ui/views/cluster"
	"github.com/xfertop/xfertop/ui/views/timeline"
)

// commands are the `:` command line's verbs, as k9s has them: go to a rank's streams in the
// timeline or a host in the cluster view, colour it by a link, show a view, quit. A view's name alone is a command too.
var commands = []string{"rank", "host", "link", "view", "q", "quit"}

// linkArgs are :link's arguments, the cluster view's link metrics.
var linkArgs = []string{"pcie", "nvlink", "nic", "hbm"}

// cmdLine is the `:` command line: a text input with completion (tab), run with enter, left with
// esc; what a command said last (an error, where it went) stays in the footer until the next key.
type cmdLine struct {
	input textinput.Model
	open  bool
	said  string
	bad   bool // what it said is an error
}

func newCmdLine() cmdLine {
	ti := textinput.New()
	ti.Prompt = ":"
	ti.Placeholder = "rank N, host N, link nic, view cluster, q  (tab completes)"
	return cmdLine{input: ti}
}

// openCmd opens the command line.
func (m *Model) openCmd() tea.Cmd {
	m.cmd.open, m.cmd.said = true, ""
	m.cmd.input.SetValue("")
	return m.cmd.input.Focus()
}

// cmdKey takes a key while the command line is open.
func (m *Model) cmdKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.cmd.open = false
		m.cmd.input.Blur()
		return nil
	case "tab":
		m.cmd.input.SetValue(m.complete(m.cmd.input.Value()))
		m.cmd.input.CursorEnd()
		return nil
	case "enter":
		m.cmd.open = false
		m.cmd.input.Blur()
		return m.runCmd(m.cmd.input.Value())
	}
	var cmd tea.Cmd
	m.cmd.input, cmd = m.cmd.input.Update(msg)
	return cmd
}

// viewNames are the views' names in lower case, in tab order.
func (m *Model) viewNames() []string {
	out := make([]string, len(m.names))
	for i, n := range m.names {
		out[i] = strings.ToLower(n)
	}
	return out
}

// candidates returns what the word being typed in line could become, and the line before it.
func (m *Model) candidates(line string) (head string, cands []string) {
	fields := strings.Fields(line)
	typing := ""
	if len(fields) > 0 && !strings.HasSuffix(line, " ") {
		typing, fields = fields[len(fields)-1], fields[:len(fields)-1]
	}
	var pool []string
	switch {
	case len(fields) == 0:
		pool = append(slices.Clone(commands), m.viewNames()...)
	case len(fields) == 1 && fields[0] == "view":
		pool = m.viewNames()
	case len(fields) == 1 && fields[0] == "link":
		pool = linkArgs
	case len(fields) == 1 && fields[0] == "host":
		if cl, ok := m.clusterPane(); ok { // the hosts' names (a number is typed whole)
			_, names := cl.HostNumbers()
			pool = slices.DeleteFunc(names, func(n string) bool { return n == "" })
		}
	}
	for _, c := range pool {
		if (strings.HasPrefix(c, strings.ToLower(typing)) || strings.HasPrefix(c, typing)) && !slices.Contains(cands, c) {
			cands = append(cands, c)
		}
	}
	if len(fields) > 0 {
		head = strings.Join(fields, " ") + " "
	}
	return head, cands
}

// complete completes the word being typed: to the one candidate and a space, or as far as the
// candidates agree.
func (m *Model) complete(line string) string {
	head, cands := m.candidates(line)
	switch len(cands) {
	case 0:
		return line
	case 1:
		return head + cands[0] + " "
	}
	p := cands[0]
	for _, c := range cands[1:] {
		for !strings.HasPrefix(c, p) {
			p = p[:len(p)-1]
		}
	}
	if typed := strings.TrimPrefix(line, head); len(p) > len(typed) {
		return head + p
	}
	return line
}

// runCmd runs a command line; what it did, or why it could not, is said in the footer.
func (m *Model) runCmd(line string) tea.Cmd {
	f := strings.Fields(strings.ToLower(line))
	if len(f) == 0 {
		return nil
	}
	say := func(bad bool, format string, a ...any) tea.Cmd {
		m.cmd.said, m.cmd.bad = fmt.Sprintf(format, a...), bad
		return nil
	}
	cl, hasCluster := m.clusterPane()
	arg := ""
	if len(f) > 1 {
		arg = f[1]
	}
	num := func() (int, bool) {
		n, err := strconv.Atoi(arg)
		return n, err == nil
	}
	switch verb := f[0]; {
	case verb == "q" || verb == "quit":
		return tea.Quit
	case verb == "view" || slices.Contains(m.viewNames(), verb):
		name := verb
		if verb == "view" {
			name = arg
		}
		i := slices.Index(m.viewNames(), name)
		if i < 0 {
			return say(true, ":view %q: no such view; one of %s", name, strings.Join(m.viewNames(), ", "))
		}
		m.tab, m.back = i, nil
		return nil
	case (verb == "rank" || verb == "host" || verb == "link") && !hasCluster:
		return say(true, ":%s: this console has no cluster view", verb)
	case (verb == "rank" || verb == "host") && m.deviceCount() == 0:
		return say(true, ":%s %s: no device has reported yet", verb, arg)
	case verb == "rank":
		n, ok := num()
		if !ok || !cl.GoDevice(n) {
			return say(true, ":rank %s: give a rank (GPU) %s", arg, m.rankRange())
		}
		// The rank's streams in the timeline, where a rank's work is; esc goes up to its GPU in the
		// cluster view, as it would have come down. A rank with no stream yet stays there.
		if tl, ok := m.timelinePane(); ok && tl.ShowDevice(int32(n)) {
			m.tab, m.back = m.timeline, []int{TabCluster}
			return say(false, "rank %d: its streams (esc: its GPU in the cluster view)", n)
		}
		m.tab, m.back = TabCluster, nil
		return say(false, "rank %d: no stream has reported yet; its GPU in the cluster view", n)
	case verb == "host":
		// A host by its number, or by the name a source of the job gave it ("node-a"); a name
		// that is a number too is the host numbered so.
		n, ok := num()
		named := ""
		if !ok {
			n, ok = cl.HostNamed(arg)
			named = arg
		}
		if !ok || !cl.GoHost(n, -1) {
			return say(true, ":host %s: give %s", arg, hostChoice(cl.HostNumbers()))
		}
		m.tab, m.back = TabCluster, nil
		if nums, names := cl.HostNumbers(); named == "" {
			if i := slices.Index(nums, n); i >= 0 {
				named = names[i]
			}
		}
		if named != "" && named != strconv.Itoa(n) {
			return say(false, "host %s (%d): its GPUs", named, n)
		}
		return say(false, "host %d: its GPUs", n)
	case verb == "link":
		if !slices.Contains(linkArgs, arg) || !cl.SetMetric(arg) {
			return say(true, ":link %q: one of %s", arg, strings.Join(linkArgs, ", "))
		}
		cl.GoCluster() // the heatmap of every host by that link, not a drilled-in GPU's streams
		m.tab, m.back = TabCluster, nil
		return say(false, "cluster coloured by %s", cl.Metric().Name)
	}
	return say(true, ":%s: no such command; %s, or a view's name", f[0], strings.Join(commands, ", "))
}

// clusterPane returns the cluster view, where the console has one.
func (m *Model) clusterPane() (*cluster.Model, bool) {
	if TabCluster >= len(m.panes) {
		return nil, false
	}
	s, ok := m.panes[TabCluster].(*slot[*cluster.Model])
	if !ok {
		return nil, false
	}
	return s.w, true
}

// timelinePane returns the timeline, where the console has one.
func (m *Model) timelinePane() (*timeline.Model, bool) {
	if m.timeline < 0 {
		return nil, false
	}
	s, ok := m.panes[m.timeline].(*slot[*timeline.Model])
	if !ok {
		return nil, false
	}
	return s.w, true
}

// deviceCount is how many devices the job has, as far as the console knows.
func (m *Model) deviceCount() int {
	m.devRows.Of(m.res, m.info.Meta.Devices)
	return m.devRows.Len()
}

// rankRange says which ranks :rank takes: 0 to the job's last, and those past it the analysis
// counts (a trace's 20,000 or 2³¹−1).
func (m *Model) rankRange() string {
	r := &m.devRows
	r.Of(m.res, m.info.Meta.Devices)
	if r.Len() <= 4 { // a few: each by name
		ids := make([]string, r.Len())
		for p := range ids {
			ids[p] = fmt.Sprint(r.ID(p))
		}
		if len(ids) == 1 {
			return ids[0]
		}
		return "one of " + strings.Join(ids[:len(ids)-1], ", ") + " or " + ids[len(ids)-1]
	}
	s := fmt.Sprintf("from 0 to %d", r.Near()-1)
	switch far := r.Len() - r.Near(); {
	case r.Near() == 0:
		s = fmt.Sprintf("one of %d from %d to %d", far, r.ID(0), r.ID(far-1))
	case far == 1:
		s += fmt.Sprintf(", or %d", r.ID(r.Len()-1))
	case far > 1:
		s += fmt.Sprintf(", or one of %d more from %d to %d", far, r.ID(r.Near()), r.ID(r.Len()-1))
	}
	return s
}

// hostChoice says which hosts :host takes: the job's as the host map places its devices, a range
// where they run on from 0 (a topology's) and none has a name, else the first few by number, each
// with its name where a source of the job named it (the hosts a job's ranks named: "node-a (0)").
func hostChoice(hs []int, names []string) string {
	named := slices.ContainsFunc(names, func(n string) bool { return n != "" })
	switch {
	case len(hs) == 0:
		return "a host: no device's host is known"
	case hs[len(hs)-1] == len(hs)-1 && !named:
		return fmt.Sprintf("a host from 0 to %d", len(hs)-1)
	}
	const shown = 8
	parts := make([]string, 0, shown+1)
	for i, h := range hs[:min(len(hs), shown)] {
		if i < len(names) && names[i] != "" {
			parts = append(parts, fmt.Sprintf("%s (%d)", names[i], h))
			continue
		}
		parts = append(parts, strconv.Itoa(h))
	}
	if len(hs) > shown {
		parts = append(parts, fmt.Sprintf("… (%d hosts)", len(hs)))
	}
	what := "one of the job's hosts: "
	if named {
		what = "one of the job's hosts, by name or number: "
	}
	return what + strings.Join(parts, ", ")
}

// cmdView is the footer while the command line is open (with the candidates for the word being
// typed), or what the last command said.
func (m *Model) cmdView() string {
	if m.cmd.open {
		_, cands := m.candidates(m.cmd.input.Value())
		return m.cmd.input.View() + "  " + m.styles.Muted.Render(strings.Join(cands, " "))
	}
	if m.cmd.bad {
		return m.styles.Alert.Render(m.cmd.said)
	}
	return m.styles.Muted.Render(m.cmd.said)
}
