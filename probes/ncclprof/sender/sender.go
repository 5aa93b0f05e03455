package sender

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// Environment variables the plugin reads.
const (
	EnvEvents    = "XFERTOP_NCCL_EVENTS"   // detail: coll (default), api, proxy, kernel, all, or a mask
	EnvRing      = "XFERTOP_RING_EVENTS"   // records the ring holds (default 65536)
	EnvRecordDir = "XFERTOP_RECORD_DIR"    // write a per-rank .xfr recording here
	EnvFlushMs   = "XFERTOP_FLUSH_TIMEOUT" // how long the end of a job waits for the sender (ms, default 2000)
	EnvChain     = "XFERTOP_CHAIN_PLUGIN"  // a second NCCL profiler plugin to load and forward every call to
	EnvTags      = "XFERTOP_NCCL_TAGS"     // names of NCCL 2.31's per-call profiler tags: 1=forward,2=backward
	// EnvNCCLHostID is NCCL's own: when set, the rank's host as NCCL sees it (read, not set, here).
	EnvNCCLHostID = "NCCL_HOSTID"
	EnvRank       = "RANK" // the job's rank, as torchrun sets it
)

// Config is the plugin's configuration, read from the environment at the first init.
type Config struct {
	Mask       uint64
	Ring       uint64
	FlushMs    int64
	Attach     *attach.Addr // nil: no console
	RecordDir  string
	GlobalRank int
	Host       string
	Pid        int
	SendEvery  time.Duration // partial batches go out at least this often
	Batch      int           // events per chunk
	Retry      time.Duration // how often a lost console is tried again
	Chain      string        // the profiler plugin to chain: a path, or a name as NCCL_PROFILER_PLUGIN takes it
	TagNames   map[uint64]string
}

// MaxChainPath is the longest XFERTOP_CHAIN_PLUGIN the plugin takes (its C side's buffer).
const MaxChainPath = 1023

// DefaultRing is the default ring size: 65,536 records of 176 bytes (11 MiB).
const DefaultRing = 1 << 16

// ConfigFromEnv reads the configuration; an error disables the plugin, and says why.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Ring: DefaultRing, FlushMs: 2000, GlobalRank: -1, Pid: os.Getpid(), SendEvery: 100 * time.Millisecond,
		Batch: recordings.DefaultBatch, Retry: time.Second}
	mask, ok := fold.ParseLevel(getenv(EnvEvents))
	if !ok {
		return c, fmt.Errorf("%s=%q: give coll, api, proxy, kernel, all (comma-separated) or an NCCL event mask", EnvEvents, getenv(EnvEvents))
	}
	c.Mask = mask
	if v := getenv(EnvRing); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < 64 || n > 1<<24 {
			return c, fmt.Errorf("%s=%q: give a number of records between 64 and 16777216", EnvRing, v)
		}
		c.Ring = 1 << uint(math.Ceil(math.Log2(float64(n))))
	}
	if v := getenv(EnvFlushMs); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 60000 {
			return c, fmt.Errorf("%s=%q: give milliseconds between 0 and 60000", EnvFlushMs, v)
		}
		c.FlushMs = n
	}
	if v := getenv(EnvRank); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			c.GlobalRank = n
		}
	}
	tags, err := parseTags(getenv(EnvTags))
	if err != nil {
		return c, err
	}
	c.TagNames = tags
	c.Chain = getenv(EnvChain)
	if len(c.Chain) > MaxChainPath {
		return c, fmt.Errorf("%s: a path of %d bytes; at most %d", EnvChain, len(c.Chain), MaxChainPath)
	}
	c.RecordDir = getenv(EnvRecordDir)
	if v := getenv(attach.EnvAttach); v != "" || c.RecordDir == "" {
		a, err := attach.ParseAddr(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", attach.EnvAttach, err)
		}
		c.Attach = &a
	}
	// NCCL takes a rank's host from NCCL_HOSTID when it is set (ranks sharing a machine then talk
	// as separate hosts, over the network transport): the host the plugin reports is NCCL's (on an
	// H200, two ranks sharing the GPU as two NCCL hosts were reported as the machine's one host).
	c.Host = getenv(EnvNCCLHostID)
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	return c, nil
}

// parseTags reads XFERTOP_NCCL_TAGS: comma-separated TAG=NAME, TAG a number (the userProfilerTag
// the job passes to NCCL), NAME any text without a comma.
func parseTags(v string) (map[uint64]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[uint64]string{}
	for i, part := range strings.Split(v, ",") {
		k, name, ok := strings.Cut(part, "=")
		tag, err := strconv.ParseUint(strings.TrimSpace(k), 0, 64)
		name = strings.TrimSpace(name)
		if !ok || err != nil || tag == 0 || name == "" {
			return nil, fmt.Errorf("%s=%q: item %d (%q): give TAG=NAME, TAG a number above 0, comma-separated", EnvTags, v, i+1, part)
		}
		out[tag] = name
	}
	return out, nil
}

// Sender folds the ring's records into events and delivers them to the console and/or a per-rank
// recording. Comm may be called from any thread; Add and Pump only from the sender goroutine.
type Sender struct {
	cfg       Config
	epochMono int64
	epochUnix int64
	strs      *timeline.Strings
	folder    *fold.Folder
	events    []timeline.Event
	lastSend  int64
	outs      []*output
	rank      int
	version   int

	mu    sync.Mutex
	inits []initRec
	comms int

	unknownSeen int64
	alerted     bool
	chain       string   // the chained plugin, as loaded ("inspector (interface v5)")
	warnings    []string // chaining's, not yet sent as alerts
	chainLost   bool     // an alert said events were not forwarded
	records     int64    // records folded: callbacks that queued one
	lastCost    int64    // when the cost was last sent
}

type initRec struct {
	ctx     uint32
	c       fold.Comm
	t       int64
	version int
}

// New returns a sender whose time 0 is epochMono on the records' clock, epochUnix on the wall clock.
func New(cfg Config, epochMono, epochUnix int64) *Sender {
	s := &Sender{cfg: cfg, epochMono: epochMono, epochUnix: epochUnix, strs: timeline.NewStrings(), rank: cfg.GlobalRank}
	s.folder = fold.New(s.strs, func(e *timeline.Event) { s.events = append(s.events, *e) },
		fold.Config{GlobalRank: cfg.GlobalRank, Mask: cfg.Mask, Epoch: epochMono, Posted: cfg.Attach != nil, TagNames: cfg.TagNames})
	if cfg.Attach != nil {
		s.outs = append(s.outs, &output{name: cfg.Attach.String(), addr: cfg.Attach})
	}
	if cfg.RecordDir != "" {
		s.outs = append(s.outs, &output{name: cfg.RecordDir, dir: cfg.RecordDir})
	}
	return s
}

// Comm registers a communicator's context, before any record of it is queued.
func (s *Sender) Comm(ctx uint32, c fold.Comm, t int64, version int) {
	s.mu.Lock()
	s.inits = append(s.inits, initRec{ctx, c, t, version})
	s.mu.Unlock()
}

func (s *Sender) takeInits() {
	s.mu.Lock()
	inits := s.inits
	s.inits = nil
	s.mu.Unlock()
	for _, in := range inits {
		if s.rank < 0 {
			s.rank = in.c.Rank
		}
		s.version = max(s.version, in.version)
		s.comms++
		s.folder.Init(in.ctx, in.c, in.t)
	}
}

// ChainLoaded records the chained plugin's name and interface (for the recording's description).
// It is called once, before the first connection.
func (s *Sender) ChainLoaded(name string) {
	s.mu.Lock()
	s.chain = name
	s.mu.Unlock()
}

// ChainWarn queues a warning about the chained plugin, sent as an alert (any thread).
func (s *Sender) ChainWarn(msg string) {
	s.mu.Lock()
	s.warnings = append(s.warnings, msg)
	s.mu.Unlock()
}

// Add folds one record.
func (s *Sender) Add(r *fold.Record) {
	if r.Op == fold.RecStart {
		s.mu.Lock()
		pending := len(s.inits) > 0
		s.mu.Unlock()
		if pending {
			s.takeInits()
		}
	}
	s.records++
	s.folder.Add(r)
}

// cost emits the plugin's cost so far as samples of this rank: the mean time of a callback (of
// those timed), and what the callbacks (every record, and every drop) took, estimated from that
// mean, per million ns of the NCCL operations folded. Nothing is sent while nothing is known:
// callbacks can be timed before the sender has folded any record they queued (the pump read the
// counters before draining the ring), and a time per callback over no callbacks says nothing.
func (s *Sender) cost(now int64, c Counters) {
	calls := s.records + c.Dropped
	if s.comms == 0 || c.CostSamples == 0 || calls == 0 {
		return
	}
	s.lastCost = now
	at := now - s.epochMono
	dev := int32(max(s.rank, 0))
	ps := c.CostNs * 1000 / c.CostSamples
	s.events = append(s.events, timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(timeline.SampleProfilerCallbackPs), Start: at, End: at,
		Queued: -1, Device: dev, Peer: timeline.NoDevice, Bytes: ps, Op: uint64(calls)})
	if op := s.folder.Stats().OpNs; op > 0 {
		ppm := int64(float64(calls) * float64(ps) / 1000 / float64(op) * 1e6)
		s.events = append(s.events, timeline.Event{Kind: timeline.KindDeviceSample, Sub: uint8(timeline.SampleProfilerOverheadPPM), Start: at, End: at,
			Queued: -1, Device: dev, Peer: timeline.NoDevice, Bytes: ppm, Op: uint64(calls)})
	}
}

// Counters are the C side's counts, as Pump reads them.
type Counters struct {
	Dropped     int64 // events the callbacks dropped (the ring was full)
	Unknown     int64 // descriptors of event types the plugin does not know
	ChainLost   int64 // events the chained plugin was not given (no free handle slot)
	CostNs      int64 // the time of the callbacks timed to measure the plugin's cost
	CostSamples int64 // how many were timed
}

// CostEvery is how often the plugin's cost is sent (and at the end of the job).
const CostEvery = time.Second

// Pump finishes what is due at host time now and sends when a batch is full, SendEvery has
// passed, or final (the job is ending: everything is flushed).
func (s *Sender) Pump(now int64, c Counters, final bool) {
	ringDropped, unknown, chainLost := c.Dropped, c.Unknown, c.ChainLost
	s.takeInits()
	s.folder.Tick(now)
	if final {
		s.folder.Flush()
	}
	if unknown > s.unknownSeen && !s.alerted && s.comms > 0 {
		// Once per process: NCCL sent something this plugin does not know; it is ignored.
		s.alerted = true
		at := now - s.epochMono
		s.events = append(s.events, timeline.Event{Kind: timeline.KindAlert, Start: at, End: at, Queued: -1, Device: int32(max(s.rank, 0)),
			Peer: timeline.NoDevice, Label: s.strs.ID(fmt.Sprintf("NCCL profiler: an event type this plugin does not know was ignored (%d so far); is this NCCL newer than the plugin?", unknown))})
	}
	s.unknownSeen = unknown
	s.chainAlerts(now, chainLost)
	if final || now-s.lastCost >= int64(CostEvery) {
		s.cost(now, c)
	}
	if len(s.events) < s.cfg.Batch && !final && now-s.lastSend < int64(s.cfg.SendEvery) {
		return
	}
	s.lastSend = now
	st := s.folder.Stats()
	for _, o := range s.outs {
		o.send(s, ringDropped+st.Stale, now, final)
	}
	s.events = s.events[:0]
}

// chainAlerts turns chaining's warnings into alerts, once a communicator has named the rank.
func (s *Sender) chainAlerts(now, lost int64) {
	if s.comms == 0 {
		return
	}
	s.mu.Lock()
	msgs := s.warnings
	s.warnings = nil
	s.mu.Unlock()
	if lost > 0 && !s.chainLost {
		s.chainLost = true
		msgs = append(msgs, fmt.Sprintf("chained profiler %s: %d events not forwarded to it (more open at once than XFERTOP_RING_EVENTS)", s.chain, lost))
	}
	at := now - s.epochMono
	for _, m := range msgs {
		s.events = append(s.events, timeline.Event{Kind: timeline.KindAlert, Start: at, End: at, Queued: -1, Device: int32(max(s.rank, 0)),
			Peer: timeline.NoDevice, Label: s.strs.ID("NCCL profiler: " + m)})
	}
}

// Close ends every output (a recording gets its index).
func (s *Sender) Close() {
	for _, o := range s.outs {
		o.close()
	}
}

func (s *Sender) meta() recordings.Meta {
	m := recordings.Meta{Source: "nccl profiler plugin", Backend: "nccl", Topology: "unknown", IdleMode: timeline.IdleEngine,
		EpochUnixNs: s.epochUnix, Writer: "xfertop nccl profiler plugin",
		Extra: map[string]string{"nccl.host": s.cfg.Host, "nccl.pid": strconv.Itoa(s.cfg.Pid), "nccl.rank": strconv.Itoa(s.rank),
			"nccl.profiler_version": strconv.Itoa(s.version), "nccl.events": "0x" + strconv.FormatUint(s.cfg.Mask, 16)}}
	s.mu.Lock()
	if s.chain != "" {
		m.Extra["nccl.chain"] = s.chain
	}
	s.mu.Unlock()
	return m
}

// output is one destination: a console connection or a recording file.
type output struct {
	name    string
	addr    *attach.Addr
	dir     string
	conn    io.Closer
	w       *recordings.Writer
	sent    int   // strings already sent on this stream
	dropped int64 // drops already reported on this stream
	lost    int64 // events this output could not deliver
	retryAt int64
	failed  bool
}

func (o *output) open(s *Sender, now int64) error {
	if o.addr != nil {
		if now < o.retryAt {
			return errors.New("waiting to retry")
		}
		c, err := attach.Dial(*o.addr, 200*time.Millisecond)
		if err != nil {
			o.retryAt = now + int64(s.cfg.Retry)
			return err
		}
		w, err := recordings.NewStreamWriter(o.name, c)
		if err != nil {
			c.Close()
			return err
		}
		o.conn, o.w, o.sent = c, w, 1
		return o.w.WriteMeta(s.meta())
	}
	if o.failed {
		return errors.New("recording failed")
	}
	host := strings.ReplaceAll(s.cfg.Host, string(filepath.Separator), "_")
	path := filepath.Join(o.dir, fmt.Sprintf("rank%d-%s-%d.xfr", max(s.rank, 0), host, s.cfg.Pid))
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		o.failed = true
		return err
	}
	w, err := recordings.Create(path)
	if err != nil {
		o.failed = true
		return err
	}
	o.w, o.sent = w, 1
	return o.w.WriteMeta(s.meta())
}

func (o *output) send(s *Sender, dropped, now int64, final bool) {
	if o.w == nil && o.addr == nil && len(s.events) == 0 && dropped == 0 {
		// A recording is named and described by its rank, known at the first communicator's init,
		// which comes before the first event: nothing to write yet.
		return
	}
	if o.w == nil {
		if err := o.open(s, now); err != nil {
			o.lost += int64(len(s.events))
			o.reset()
			return
		}
	}
	err := o.w.WriteStrings(uint32(o.sent), s.strs.All()[o.sent:])
	o.sent = s.strs.Len()
	if d := dropped + o.lost - o.dropped; err == nil && d > 0 {
		err = o.w.WriteDropped(d)
		o.dropped = dropped + o.lost
	}
	for i := 0; err == nil && i < len(s.events); i += s.cfg.Batch {
		err = o.w.WriteEvents(s.events[i:min(i+s.cfg.Batch, len(s.events))])
	}
	if err == nil {
		err = o.w.Flush()
	}
	if err != nil {
		// The console went away (or the disk is full): these events are lost, and counted for the
		// next connection; a console is tried again after Retry.
		o.lost += int64(len(s.events))
		o.retryAt = now + int64(s.cfg.Retry)
		o.reset()
		return
	}
	if final && o.addr == nil {
		_ = o.w.WriteOutcome([][2]string{{"ended", ""}})
		_ = o.w.Close()
		o.w = nil
		o.failed = true // one recording per process
	}
}

func (o *output) reset() {
	if o.conn != nil {
		o.conn.Close()
	}
	o.conn, o.w = nil, nil
}

func (o *output) close() {
	if o.w != nil {
		_ = o.w.Close()
	}
	o.reset()
}

// Connected reports whether an output to a console is connected.
func (s *Sender) Connected() bool {
	for _, o := range s.outs {
		if o.addr != nil && o.w != nil {
			return true
		}
	}
	return false
}
