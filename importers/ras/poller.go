package ras

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// DefaultInterval is how often a Poller asks for the job's state: RAS gathers it from every peer,
// waiting up to its collective timeout (5 s) for the slow ones.
const DefaultInterval = 10 * time.Second

// Poller watches a running job through its RAS port: a status every Interval, and, where the
// job's NCCL has it, the monitor mode's peer events (a dead peer is told at once, and asks for a
// status). What RAS states becomes events as ReadFiles makes them, each told once: a rank dead,
// missing or failing when first seen; collective counts that disagree only when a second status
// finds them the same (a running job's ranks are often a collective apart for a moment; counts
// that do not move are a hang). A failed poll is a mark naming the error, once per error.
type Poller struct {
	Addr     string
	Interval time.Duration // DefaultInterval when 0
	Options  ClientOptions
	// Epoch is the session's time 0 (Unix ns): events are placed on the wall clock from it.
	Epoch int64
	// CommBase: RAS's communicators are numbered from CommBase+1, apart from the job's own.
	CommBase uint32
	// Strings is the poller's own label table: the events handed to emit refer to it. It belongs
	// to Run's goroutine; emit may read it.
	Strings *timeline.Strings
	// Now tells the time (time.Now when nil).
	Now func() time.Time
	// Polled, when set, is called on Run's goroutine after each status poll, with its error.
	Polled func(error)

	ids      commIDs
	told     map[string]bool
	lastMism map[string]bool // the count mismatches of the last status
	world    map[procKey]int32
}

// Run polls until ctx ends, handing emit each poll's new events (on Run's goroutine).
func (p *Poller) Run(ctx context.Context, emit func([]timeline.Event)) {
	if p.Strings == nil {
		p.Strings = timeline.NewStrings()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	every := p.Interval
	if every <= 0 {
		every = DefaultInterval
	}
	p.ids.base, p.told, p.lastMism, p.world = p.CommBase, map[string]bool{}, map[string]bool{}, map[procKey]int32{}
	peers := make(chan PeerEvent, 64)
	monitorDone := make(chan error, 1)
	monitoring := false
	startMonitor := func() {
		monitoring = true
		go func() {
			monitorDone <- Monitor(ctx, p.Addr, p.Options, func(ev PeerEvent) {
				select {
				case peers <- ev:
				case <-ctx.Done():
				}
			})
		}()
	}
	startMonitor()
	noMonitor := false
	tick := time.NewTicker(every)
	defer tick.Stop()
	p.poll(ctx, emit)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-peers:
			p.peer(ev, emit)
			p.poll(ctx, emit)
		case err := <-monitorDone:
			monitoring = false
			if errors.Is(err, ErrNoMonitor) && !noMonitor {
				noMonitor = true
				p.mark(emit, fmt.Sprintf("%v; polling its status every %s", err, every))
			}
		case <-tick.C:
			if !monitoring && !noMonitor {
				startMonitor() // the job may have come up since
			}
			p.poll(ctx, emit)
		}
	}
}

func (p *Poller) at() int64 { return p.Now().UnixNano() - p.Epoch }

// poll asks for one status and emits what is new in it.
func (p *Poller) poll(ctx context.Context, emit func([]timeline.Event)) {
	doc, err := Status(ctx, p.Addr, p.Options)
	if p.Polled != nil {
		defer p.Polled(err)
	}
	if err != nil {
		if ctx.Err() == nil {
			// A garbage peer's answer is quoted by its first bytes, as the attach warning does:
			// a label holds a line, not the kilobytes such a peer may send.
			p.mark(emit, ErrText(err))
		}
		return
	}
	p.world = worldRanks(doc)
	im := &kineto.Imported{Strings: p.Strings, Extra: map[string]string{}}
	findings(doc, "RAS at "+p.Addr, p.at(), im, &p.ids)
	mism := map[string]bool{}
	var out []timeline.Event
	for _, e := range im.Events {
		msg := p.Strings.Lookup(e.Label)
		if e.Sub == timeline.AlertCountMismatch {
			mism[msg] = true
			if !p.lastMism[msg] {
				continue // told when a second status finds the counts where they were
			}
		}
		if p.told[msg] {
			continue
		}
		p.told[msg] = true
		out = append(out, e)
	}
	p.lastMism = mism
	if len(out) > 0 {
		emit(out)
	}
}

// peer emits a monitor event: a dead peer is an alert naming its rank (from the last status),
// a new one a mark.
func (p *Poller) peer(ev PeerEvent, emit func([]timeline.Event)) {
	dev := timeline.NoDevice
	if d, ok := p.world[procKey{ev.Peer.Host, ev.Peer.Pid}]; ok {
		dev = d
	}
	who := fmt.Sprintf("process %d on %s (GPUs %v)", ev.Peer.Pid, ev.Peer.Host, ev.Peer.CudaDevs)
	if ev.Peer.Host == "" {
		who = "peer " + ev.Peer.Addr
	}
	if dev >= 0 {
		who = fmt.Sprintf("rank %d, %s", dev, who)
	}
	msg := fmt.Sprintf("RAS monitor at %s: %s: %s at %s %s", p.Addr, ev.Event, who, ev.Timestamp, ev.Details)
	if p.told[msg] {
		return
	}
	p.told[msg] = true
	at := p.at()
	e := timeline.Event{Kind: timeline.KindMark, Start: at, End: at, Queued: -1, Device: dev, Peer: timeline.NoDevice, Label: p.Strings.ID(msg)}
	if ev.Event == "PEER_DEAD" {
		e.Kind, e.Sub, e.Status = timeline.KindAlert, timeline.AlertRankDead, timeline.StatusError
	}
	emit([]timeline.Event{e})
}

// mark emits a mark with msg, once.
func (p *Poller) mark(emit func([]timeline.Event), msg string) {
	if p.told[msg] {
		return
	}
	p.told[msg] = true
	at := p.at()
	emit([]timeline.Event{{Kind: timeline.KindMark, Start: at, End: at, Queued: -1, Device: timeline.NoDevice, Peer: timeline.NoDevice, Label: p.Strings.ID(msg)}})
}
