package ras

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The text status ncclras prints by default (no -f json), as NCCL's src/ras/client_support.cc
// (rasClientRunInit, rasClientRunComms, rasClientBreakDownErrors) writes it: a header naming
// NCCL's version, a job summary, a communicators table (communicators grouped by size, nodes,
// status and errors, largest first), then an Errors section (INCOMPLETE and DEAD processes of
// the job; per communicator, "#group-index (hash) INCOMPLETE" with its missing ranks and
// "#group-index (hash) ERROR" with init and asynchronous errors) and a Warnings section (TIMEOUT;
// "#group-index (hash) MISMATCH" with ranks of different status and different collective
// counts). It is a summary: a healthy communicator's hash and ranks are not printed, and ranks
// are named only where they are few ("outliers"); the others are counted. The parser keeps what
// is unnamed unnamed (a rank record standing for Count ranks, rank -1) rather than guessing.

// maxTextLine bounds one line of a text status (NCCL writes lines of at most a few hundred bytes).
const maxTextLine = 64 << 10

// SniffText reports whether a file's first bytes are ncclras's text status.
func SniffText(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	return bytes.HasPrefix(t, []byte("NCCL version ")) &&
		(bytes.Contains(t, []byte("\nJob summary")) || bytes.Contains(t, []byte("\nCommunicators...")))
}

// NCCL's ncclResult_t names, as ncclErrorToString prints them; "Unexpected error" stands for any
// other code, which the text does not say.
var resultCodes = map[string]int{
	"Unhandled CUDA error": 1, "System error": 2, "Internal error": 3, "Invalid argument": 4,
	"Invalid usage": 5, "Remote process error": 6, "NCCL operation in progress": 7,
	"Unexpected error": resultUnnamed,
}

// resultUnnamed is an error code the text status calls only "Unexpected error".
const resultUnnamed = -1

// resultText says an ncclResult_t code as the findings name it.
func resultText(code int) string {
	if code == resultUnnamed {
		return `code not named by ncclras's text ("Unexpected error")`
	}
	return fmt.Sprintf("%d (ncclResult)", code)
}

var (
	reGroupRow      = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+(NOCOMM|INIT|RUNNING|FINALIZE|ABORT)\s+((?:OK|MISMATCH|ERROR|INCOMPLETE)(?:,(?:MISMATCH|ERROR|INCOMPLETE))*)\s*$`)
	reCommHead      = regexp.MustCompile(`^#(\d+)-(\d+) \(([0-9a-fA-F]{1,16})\) (INCOMPLETE|ERROR|MISMATCH)$`)
	reCount         = regexp.MustCompile(`^  (\d+) `)
	reRankHead      = regexp.MustCompile(`^  Rank (\d+) (.*)$`)
	reRankWhere     = regexp.MustCompile(`^-- (?:GPU (\d+)(?: \(NVML \d+\))? managed by process (-?\d+) on node (\S*)|\[process information not found\])$`)
	reProcess       = regexp.MustCompile(`^  Process (-?\d+) on node (\S*) managing GPUs? .*$`)
	reOpDiff        = regexp.MustCompile(`^  Communicator ranks have different (\S+) operation counts$`)
	reLaunched      = regexp.MustCompile(`^(?:has launched up to operation (\d+)|has not launched any operations)$`)
	reGroupLaunched = regexp.MustCompile(`^ranks have (?:launched up to operation (\d+)|not launched any operations)$`)
	reErrKind       = regexp.MustCompile(`^  (Initialization|Asynchronous) errors? on (\d+) ranks?$`)
	reTimeouts      = regexp.MustCompile(`^  Encountered (\d+) communication timeouts? while gathering communicator data$`)
)

// textComm is what the text says of one communicator beyond the table: its ranks by number, and
// its collective counts as groups (the text counts the ranks of a count, naming them only when
// few).
type textComm struct {
	named  map[int]*Rank
	extra  []Rank // unnamed groups of answering ranks (error or status), rank -1, Count ranks each
	miss   []Rank // missing ranks, and unnamed groups of them
	counts map[string][]countGroup
	nMiss  int // missing ranks, named or not (INCOMPLETE, and NOCOMM of a status mismatch)
}

// countGroup is one value of a collective's count and the ranks at it.
type countGroup struct {
	value uint64
	n     int
	ranks []int
}

// textParser holds the state of one text status being read.
type textParser struct {
	name    string
	line    int
	doc     *Doc
	groups  [][]int // the communicators (indexes in doc.Comms) of each table group
	comms   map[int]*textComm
	dead    map[procKey]bool
	cur     *textComm // the communicator whose section is being read
	curKind string
	errKind string // "Initialization" or "Asynchronous" within an ERROR section
	op      string // the collective within a MISMATCH section
	status  bool   // within "different status" of a MISMATCH section
	// The group of ranks (in the communicator's miss, or extra, list) that rank lines name next.
	lastIdx    int
	lastMiss   bool
	lastStatus string
	rowErrs    map[int]string // the table's errors of each communicator
}

func (p *textParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s (line %d): not ncclras's text status: %s", p.name, p.line, fmt.Sprintf(format, args...))
}

// parseText reads ncclras's text status into a Doc with the same meaning as the JSON of the same
// moment, as far as the text says it.
func parseText(name string, b []byte) (*Doc, error) {
	p := &textParser{name: name, doc: &Doc{}, comms: map[int]*textComm{}, dead: map[procKey]bool{}, rowErrs: map[int]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxTextLine)
	section := ""
	for sc.Scan() {
		p.line++
		l := strings.TrimRight(sc.Text(), "\r")
		if p.line == 1 {
			l = strings.TrimLeft(l, "\ufeff")
		}
		switch {
		case strings.TrimSpace(l) == "":
			// Ends a subsection (an error kind, a collective's counts), not the communicator's
			// entry: its next collective follows a blank line.
			p.errKind, p.op, p.status, p.lastIdx = "", "", false, -1
			continue
		case strings.HasPrefix(l, "NCCL version ") && section == "":
			if f := strings.Fields(l); len(f) >= 3 {
				p.doc.NCCLVersion = f[2]
			}
			continue
		case strings.HasPrefix(l, "CUDA runtime version ") && section == "":
			continue
		case l == "Job summary":
			section = "summary"
			continue
		case strings.HasPrefix(l, "Communicators..."):
			section = "comms"
			continue
		case l == "Errors" || l == "Warnings":
			section = strings.ToLower(l)
			continue
		case strings.Trim(l, "=") == "":
			continue // a heading's underline
		}
		var err error
		switch section {
		case "summary":
			// The job's nodes, processes and GPUs: what the communicators say of them is kept.
		case "comms":
			err = p.commRow(l)
		case "errors", "warnings":
			err = p.detail(l)
		default:
			err = p.errorf("%q before the job summary; want \"NCCL version …\", then \"Job summary\"", clip(l))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s (line %d): %w", name, p.line+1, err)
	}
	if p.doc.NCCLVersion == "" || p.groups == nil {
		return nil, fmt.Errorf("%s (line %d): not ncclras's text status: no communicators table (want \"Communicators...\" and its table)", name, p.line)
	}
	return p.finish()
}

// clip shortens a line quoted in an error.
func clip(l string) string {
	if len(l) > 80 {
		return l[:80] + "…"
	}
	return l
}

// commRow reads one line of the communicators table: a group of communicators of one size, node
// count, status and errors.
func (p *textParser) commRow(l string) error {
	if strings.HasPrefix(strings.TrimSpace(l), "Group ") || strings.HasPrefix(strings.TrimSpace(l), "# ") {
		if p.groups == nil {
			p.groups = [][]int{}
		}
		return nil
	}
	if l == "No communicator data collected!" {
		p.groups = [][]int{}
		return nil
	}
	m := reGroupRow.FindStringSubmatch(l)
	if m == nil || p.groups == nil {
		return p.errorf("%q; want a communicators table row (group, comms, nodes, ranks per node, ranks per comm, ranks in group, status, errors)", clip(l))
	}
	g, _ := strconv.Atoi(m[1])
	n, err1 := strconv.Atoi(m[2])
	size, err2 := strconv.Atoi(m[5])
	if g != len(p.groups) || err1 != nil || err2 != nil || n <= 0 || n > maxRanks || size <= 0 || size > maxRanks {
		return p.errorf("group row %q out of order or out of range (want group %d, 1 to %d comms and ranks)", clip(l), len(p.groups), maxRanks)
	}
	if len(p.doc.Comms)+n > maxRanks {
		return p.errorf("more than %d communicators", maxRanks)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = len(p.doc.Comms)
		c := Comm{Hash: fmt.Sprintf("group %d #%d", g, i), Size: size}
		if m[8] == "OK" && m[7] != "RUNNING" {
			// All its ranks answered with one status, the same counts and no error; the text
			// names none of them. RUNNING is nothing to tell; an abort, or a finalize, is told
			// of them all (without materialising size ranks: the table's sizes are the file's
			// word, not its length).
			r := Rank{Rank: -1, Count: size, Pid: -1, Dev: -1}
			setStatus(&r, m[7])
			c.Ranks = []Rank{r}
		}
		p.rowErrs[len(p.doc.Comms)] = m[8]
		p.doc.Comms = append(p.doc.Comms, c)
	}
	p.groups = append(p.groups, idx)
	return nil
}

// setStatus gives a rank the state NCCL's status column names (how rasClientRunComms derives it).
func setStatus(r *Rank, s string) {
	switch s {
	case "ABORT":
		r.Status.Abort = true
	case "FINALIZE":
		r.Status.Finalize = true
	case "INIT":
		if r.Status.InitState == 0 {
			r.Status.InitState = 7 // ncclInProgress: not an error, else the text says which
		}
	}
}

// detail reads one line of the Errors or Warnings section.
func (p *textParser) detail(l string) error {
	if m := reCommHead.FindStringSubmatch(l); m != nil {
		g, _ := strconv.Atoi(m[1])
		i, _ := strconv.Atoi(m[2])
		if g >= len(p.groups) || i >= len(p.groups[g]) {
			return p.errorf("%q names communicator #%d-%d, not in the communicators table", clip(l), g, i)
		}
		ci := p.groups[g][i]
		c := &p.doc.Comms[ci]
		c.Hash = "0x" + strings.TrimLeft(strings.ToLower(m[3]), "0")
		if c.Hash == "0x" {
			c.Hash = "0x0"
		}
		if p.comms[ci] == nil {
			p.comms[ci] = &textComm{named: map[int]*Rank{}, counts: map[string][]countGroup{}}
		}
		p.cur, p.curKind, p.errKind, p.op, p.status, p.lastIdx = p.comms[ci], m[4], "", "", false, -1
		return nil
	}
	switch l {
	case "INCOMPLETE", "DEAD", "TIMEOUT":
		p.cur, p.curKind = nil, l
		return nil
	}
	if p.cur == nil {
		return p.jobDetail(l)
	}
	switch p.curKind {
	case "INCOMPLETE":
		return p.incomplete(l)
	case "ERROR":
		return p.errorLine(l)
	default:
		return p.mismatchLine(l)
	}
}

// jobDetail reads a line of the job's INCOMPLETE, DEAD or TIMEOUT entry.
func (p *textParser) jobDetail(l string) error {
	switch p.curKind {
	case "DEAD":
		if m := reProcess.FindStringSubmatch(l); m != nil {
			pid, _ := strconv.ParseInt(m[1], 10, 64)
			p.dead[procKey{m[2], pid}] = true
			return nil
		}
		if strings.HasSuffix(l, "considered dead (unreachable via the RAS network)") || strings.HasPrefix(l, "  [could not find") {
			return nil
		}
	case "INCOMPLETE":
		// Processes that did not answer: their ranks are told per communicator below.
		if reProcess.MatchString(l) || strings.HasPrefix(l, "  Missing communicator data from ") || strings.HasPrefix(l, "  [could not find") {
			return nil
		}
	case "TIMEOUT":
		if m := reTimeouts.FindStringSubmatch(l); m != nil {
			p.doc.RAS.Timeouts, _ = strconv.Atoi(m[1])
			return nil
		}
	}
	return p.errorf("%q; want an entry (INCOMPLETE, DEAD, TIMEOUT, or \"#group-index (hash) INCOMPLETE|ERROR|MISMATCH\") or its lines", clip(l))
}

// rankLine reads "  Rank R <what> -- GPU g managed by process P on node H" (or "-- [process
// information not found]") into the rank's record, and returns <what>.
func (p *textParser) rankLine(l string, into map[int]*Rank) (*Rank, string, error) {
	m := reRankHead.FindStringSubmatch(l)
	if m == nil {
		return nil, "", nil
	}
	n, err := strconv.Atoi(m[1])
	i := strings.LastIndex(m[2], "-- ")
	if err != nil || i < 0 {
		return nil, "", p.errorf("%q; want \"Rank R … -- GPU g managed by process P on node H\"", clip(l))
	}
	w := reRankWhere.FindStringSubmatch(m[2][i:])
	if w == nil {
		return nil, "", p.errorf("%q; want \"-- GPU g managed by process P on node H\" or \"-- [process information not found]\" after the rank", clip(l))
	}
	r := into[n]
	if r == nil {
		r = &Rank{Rank: n, Pid: -1, Dev: -1}
		into[n] = r
	}
	if w[1] != "" {
		r.Dev, _ = strconv.Atoi(w[1])
		r.Pid, _ = strconv.ParseInt(w[2], 10, 64)
		r.Host = w[3]
	}
	return r, strings.TrimSpace(m[2][:i]), nil
}

// incomplete reads a line of a communicator's INCOMPLETE entry: ranks that did not answer.
func (p *textParser) incomplete(l string) error {
	c := p.cur
	var n int
	if _, err := fmt.Sscanf(l, "  Missing communicator data from %d rank", &n); err == nil {
		if n <= 0 || n > maxRanks {
			return p.errorf("%q: %d missing ranks out of range", clip(l), n)
		}
		c.nMiss += n
		c.miss = append(c.miss, Rank{Rank: -1, Count: n, Pid: -1, Dev: -1})
		c.miss[len(c.miss)-1].Status.Unresponsive = true
		p.lastIdx, p.lastMiss = len(c.miss)-1, true
		return nil
	}
	missing := map[int]*Rank{}
	r, what, err := p.rankLine(l, missing)
	if err != nil {
		return err
	}
	g := p.group()
	if r == nil || what != "" || !p.lastMiss || g == nil || g.Count == 0 {
		return p.errorf("%q in an INCOMPLETE entry; want \"Missing communicator data from N ranks\", then \"Rank R -- …\" lines", clip(l))
	}
	r.Status.Unresponsive = true
	r.Status.Dead = p.dead[procKey{r.Host, r.Pid}]
	g.Count-- // named now: the group counts the others
	c.miss = append(c.miss, *r)
	return nil
}

// errorLine reads a line of a communicator's ERROR entry: initialization and asynchronous errors.
func (p *textParser) errorLine(l string) error {
	c := p.cur
	if m := reErrKind.FindStringSubmatch(l); m != nil {
		p.errKind, p.lastIdx = m[1], -1
		return nil
	}
	set := func(r *Rank, code int) {
		if p.errKind == "Initialization" {
			r.Status.InitState = code
		} else {
			r.Status.AsyncError = code
		}
	}
	if p.errKind != "" {
		if m := reCount.FindStringSubmatch(l); m != nil && strings.HasPrefix(l[len(m[0]):], "ranks reported ") {
			code, ok := resultCodes[l[len(m[0])+len("ranks reported "):]]
			n, _ := strconv.Atoi(m[1])
			if !ok || n <= 1 || n > maxRanks {
				return p.errorf("%q; want \"N ranks reported <an NCCL error>\"", clip(l))
			}
			r := Rank{Rank: -1, Count: n, Pid: -1, Dev: -1}
			set(&r, code)
			c.extra = append(c.extra, r)
			p.lastIdx, p.lastMiss = len(c.extra)-1, false
			return nil
		}
		tmp := map[int]*Rank{}
		r, what, err := p.rankLine(l, tmp)
		if err != nil {
			return err
		}
		if r != nil {
			if g := p.group(); what == "" && g != nil && g.Count > 0 { // one of the group counted above
				g.Count--
				set(c.answer(r), errCode(*g, p.errKind))
				return nil
			}
			if code, ok := resultCodes[strings.TrimPrefix(what, "reported ")]; ok && strings.HasPrefix(what, "reported ") {
				set(c.answer(r), code)
				return nil
			}
		}
	}
	return p.errorf("%q in an ERROR entry; want \"Initialization|Asynchronous error(s) on N rank(s)\", then \"N ranks reported …\" or \"Rank R [reported …] -- …\"", clip(l))
}

// errCode is the error of kind an unnamed group reported.
func errCode(r Rank, kind string) int {
	if kind == "Initialization" {
		return r.Status.InitState
	}
	return r.Status.AsyncError
}

var statusNames = map[string]bool{"NOCOMM": true, "INIT": true, "RUNNING": true, "FINALIZE": true, "ABORT": true}

// mismatchLine reads a line of a communicator's MISMATCH entry: ranks of different status, and
// different collective counts.
func (p *textParser) mismatchLine(l string) error {
	c := p.cur
	if l == "  Communicator ranks have different status" {
		p.status, p.op, p.lastIdx = true, "", -1
		return nil
	}
	if m := reOpDiff.FindStringSubmatch(l); m != nil {
		p.status, p.op, p.lastIdx = false, m[1], -1
		return nil
	}
	if m := reCount.FindStringSubmatch(l); m != nil && (p.status || p.op != "") {
		n, _ := strconv.Atoi(m[1])
		rest := l[len(m[0]):]
		if n > 1 && n <= maxRanks {
			if s, ok := strings.CutPrefix(rest, "ranks have status "); ok && p.status && statusNames[s] {
				p.statusGroup(n, s)
				return nil
			}
			if lm := reGroupLaunched.FindStringSubmatch(rest); lm != nil && p.op != "" {
				v, _ := strconv.ParseUint(lm[1], 10, 64)
				c.counts[p.op] = append(c.counts[p.op], countGroup{value: v, n: n})
				return nil
			}
		}
	}
	if p.status || p.op != "" {
		tmp := map[int]*Rank{}
		r, what, err := p.rankLine(l, tmp)
		if err != nil {
			return err
		}
		if r != nil && p.status {
			if s, ok := strings.CutPrefix(what, "has status "); ok && statusNames[s] {
				p.statusGroup(1, s)
				p.statusRank(r)
				return nil
			}
			if g := p.group(); what == "" && g != nil && g.Count > 0 {
				p.statusRank(r)
				return nil
			}
		}
		if r != nil && p.op != "" {
			gs := c.counts[p.op]
			if lm := reLaunched.FindStringSubmatch(what); lm != nil {
				v, _ := strconv.ParseUint(lm[1], 10, 64)
				c.counts[p.op] = append(gs, countGroup{value: v, n: 1})
				gs = c.counts[p.op]
				what = ""
			}
			if g := len(gs) - 1; what == "" && g >= 0 && len(gs[g].ranks) < gs[g].n {
				a := c.answer(r)
				a.Counts = setCount(a.Counts, p.op, gs[g].value)
				gs[g].ranks = append(gs[g].ranks, a.Rank)
				return nil
			}
		}
	}
	return p.errorf("%q in a MISMATCH entry; want \"Communicator ranks have different status\" or \"… different OP operation counts\", then \"N ranks …\" and \"Rank R …\" lines", clip(l))
}

// statusGroup starts a group of n ranks of status s, unnamed until rank lines name them: NOCOMM
// ranks answered RAS but not as members of the communicator (missing from it, not unresponsive).
func (p *textParser) statusGroup(n int, s string) {
	c := p.cur
	r := Rank{Rank: -1, Count: n, Pid: -1, Dev: -1}
	p.lastStatus = s
	if s == "NOCOMM" {
		c.nMiss += n
		c.miss = append(c.miss, r)
		p.lastIdx, p.lastMiss = len(c.miss)-1, true
		return
	}
	setStatus(&r, s)
	c.extra = append(c.extra, r)
	p.lastIdx, p.lastMiss = len(c.extra)-1, false
}

// group is the group of ranks that rank lines name next, nil when none.
func (p *textParser) group() *Rank {
	list := p.cur.extra
	if p.lastMiss {
		list = p.cur.miss
	}
	if p.lastIdx < 0 || p.lastIdx >= len(list) {
		return nil
	}
	return &list[p.lastIdx]
}

// statusRank names one rank of the status group being read.
func (p *textParser) statusRank(r *Rank) {
	c := p.cur
	p.group().Count--
	if p.lastStatus == "NOCOMM" {
		c.miss = append(c.miss, *r)
		return
	}
	setStatus(c.answer(r), p.lastStatus)
}

// answer is the communicator's record of an answering rank, merged with what r says of it.
func (t *textComm) answer(r *Rank) *Rank {
	a := t.named[r.Rank]
	if a == nil {
		t.named[r.Rank] = r
		return r
	}
	if r.Pid >= 0 {
		a.Host, a.Pid, a.Dev = r.Host, r.Pid, r.Dev
	}
	return a
}

func setCount(m map[string]uint64, op string, v uint64) map[string]uint64 {
	if m == nil {
		m = map[string]uint64{}
	}
	m[op] = v
	return m
}

// finish gives each communicator the ranks its entries told, and checks that every communicator
// the table says is in trouble has them.
func (p *textParser) finish() (*Doc, error) {
	for g, idx := range p.groups {
		for i, ci := range idx {
			c := &p.doc.Comms[ci]
			c.text = true
			t := p.comms[ci]
			if t == nil {
				if p.rowErrs[ci] != "OK" {
					return nil, fmt.Errorf("%s (line %d): communicator #%d-%d is %s in the table, but no entry of Errors or Warnings tells its ranks (the status is cut?)",
						p.name, p.line, g, i, p.rowErrs[ci])
				}
				c.answered = c.Size
				continue
			}
			nums := make([]int, 0, len(t.named))
			for n := range t.named {
				nums = append(nums, n)
			}
			sort.Ints(nums)
			for _, n := range nums {
				c.Ranks = append(c.Ranks, *t.named[n])
			}
			for _, r := range t.extra {
				if r.Count > 0 {
					c.Ranks = append(c.Ranks, r)
				}
			}
			for _, r := range t.miss {
				if r.Rank >= 0 || r.Count > 0 {
					c.Missing = append(c.Missing, r)
				}
			}
			c.answered = max(c.Size-t.nMiss, 0)
			c.counted = t.counts
		}
	}
	p.doc.Comms = p.doc.Comms[:len(p.doc.Comms):len(p.doc.Comms)]
	n := len(p.doc.Comms)
	p.doc.CommsCount = &n
	return p.doc, nil
}
