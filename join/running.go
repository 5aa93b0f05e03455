package join

import (
	"github.com/xfertop/xfertop/timeline"
)

// openKey names one rank's part of a collective: its device and the collective's op id.
type openKey struct {
	dev int32
	op  uint64
}

// openColls is what each rank has posted and not yet reported ended: its collectives in flight.
// Ranks report a collective when it ends; the posting marks (PostedLabel) say when it was
// posted, so in between it is running (or waiting for its peers: the hang detector's question).
// Bounded: past maxOpenPostings the oldest is forgotten.
type openColls struct {
	m     map[openKey]openColl
	order []openKey
}

type openColl struct {
	e  timeline.Event
	mb *Member // the rank that posted it: its collectives end with its connection
}

func newOpenColls() *openColls { return &openColls{m: map[openKey]openColl{}} }

// posted opens the collective a posting mark names, already in session terms (clock, stream):
// drawn as a collective from the posting on.
func (o *openColls) posted(mb *Member, mark *timeline.Event) {
	k := openKey{mark.Device, mark.Op}
	if _, ok := o.m[k]; ok || mark.Stream == 0 {
		return // posted twice, or from a plugin that does not say its stream: nowhere to draw it
	}
	o.m[k] = openColl{mb: mb, e: timeline.Event{Kind: timeline.KindCollective, Sub: mark.Sub, Start: mark.Start, End: mark.Start,
		Queued: mark.Start, Device: mark.Device, Peer: timeline.NoDevice, Stream: mark.Stream, Op: mark.Op, Comm: mark.Comm,
		Ranks: mark.Ranks, Bytes: mark.Bytes, Aux: mark.Aux, Host: mark.Host}}
	o.order = append(o.order, k)
	for len(o.m) > maxOpenPostings && len(o.order) > 0 {
		delete(o.m, o.order[0])
		o.order = o.order[1:]
	}
	if len(o.order) > 4*maxOpenPostings {
		kept := o.order[:0]
		for _, k := range o.order {
			if _, ok := o.m[k]; ok {
				kept = append(kept, k)
			}
		}
		o.order = kept
	}
}

// ended closes the collective a rank reported.
func (o *openColls) ended(e *timeline.Event) {
	k := openKey{e.Device, e.Op}
	if _, ok := o.m[k]; !ok {
		return
	}
	delete(o.m, k)
	if len(o.m) == 0 {
		o.order = o.order[:0]
	}
}

// drop closes what mb posted: its connection ended, so none of it is known to run any more.
func (o *openColls) drop(mb *Member) {
	for k, c := range o.m {
		if c.mb == mb {
			delete(o.m, k)
		}
	}
}

// appendTo appends the open collectives to dst, each seen running up to now (ns); those waiting
// reports some rank has not posted yet are waits for their peers.
func (o *openColls) appendTo(dst []timeline.Event, now int64, waiting func(op uint64) bool) []timeline.Event {
	for _, c := range o.m {
		e := c.e
		e.End = max(now, e.Start)
		if waiting(e.Op) {
			e.Kind, e.Aux = timeline.KindPeerWait, e.Aux+1 // a peer wait's sequence number counts from 1
		}
		dst = append(dst, e)
	}
	return dst
}

// Ended closes what mb posted and has not reported ended: its stream (connection) ended.
func (j *Join) Ended(mb *Member) { j.open.drop(mb) }

// InFlight appends to dst j's collectives posted by their rank and not yet reported ended, each seen
// running up to now (session ns), and returns dst. A collective some of whose ranks have not posted
// it yet is, on the ranks that have, a wait for their peers (a peer wait, Sub the collective), as
// the engine reports one: the diagnosis names a hang from these.
func (j *Join) InFlight(dst []timeline.Event, now int64) []timeline.Event {
	return j.open.appendTo(dst, now, j.hang.waiting)
}
