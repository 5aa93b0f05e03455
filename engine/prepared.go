package engine

import (
	"errors"
	"fmt"
)

// Pair is one transfer of a plan: Bytes from device Src to device Dst.
type Pair struct {
	Src, Dst DeviceID
	Bytes    int64
}

// Prepared is a transfer plan built once and executed many times. Preparing validates the peers,
// picks the communicator (through the cache), reserves receive buffers from the pool and builds the
// per-device group ops; Execute then only stamps fresh op ids and queues the prebuilt commands, so
// steady-state steps do no planning work and allocate nothing.
type Prepared struct {
	c       *Client
	pairs   []Pair
	comm    *Communicator
	cmds    []deviceCmd
	sends   []*Future
	recvs   []*Future
	bufs    []*Buffer
	waitCmd []deviceCmd // one per sending device: its transfer stream waits for the source event
	pairOf  [][]int     // pairOf[k][j]: the pair index of part j of cmds[k]
	ran     bool
}

type deviceCmd struct {
	dev DeviceID
	cmd Command
}

// ErrInFlight is returned by Execute while the previous execution has not completed.
var ErrInFlight = errors.New("prepared transfer still in flight")

// Prepare builds a plan for pairs. Each device's sends and receives launch as one group.
func (c *Client) Prepare(pairs []Pair, label string) (*Prepared, error) {
	if len(pairs) == 0 {
		return nil, &GuardError{Op: "Prepare", Kind: ErrEmptyDevices, Detail: "no transfers"}
	}
	var devs []DeviceID
	seen := map[DeviceID]bool{}
	for i, p := range pairs {
		for _, d := range [2]DeviceID{p.Src, p.Dst} {
			if err := c.checkDevice("Prepare", d); err != nil {
				return nil, err
			}
			if !seen[d] {
				seen[d] = true
				devs = append(devs, d)
			}
		}
		if p.Src == p.Dst {
			return nil, &GuardError{Op: "Prepare", Kind: ErrDuplicateDevice, Devices: []DeviceID{p.Src}, Detail: fmt.Sprintf("transfer %d sends a device to itself", i)}
		}
		if p.Bytes < 0 {
			return nil, &GuardError{Op: "Prepare", Kind: ErrSizeMismatch, Devices: []DeviceID{p.Src, p.Dst}, Detail: fmt.Sprintf("transfer %d has a negative size", i)}
		}
	}
	p := &Prepared{c: c, pairs: append([]Pair(nil), pairs...), comm: c.commFor("Prepare", devs)}
	parts := map[DeviceID][]StreamOp{}
	pairIdx := map[DeviceID][]int{}
	var order []DeviceID
	add := func(d DeviceID, op StreamOp, i int) {
		if _, ok := parts[d]; !ok {
			order = append(order, d)
		}
		parts[d] = append(parts[d], op)
		pairIdx[d] = append(pairIdx[d], i)
	}
	lbl := c.strs.ID(label)
	for i, pr := range pairs {
		sf, rf := NewFuture(0), NewFuture(0)
		buf, _ := c.pool.get(pr.Dst, pr.Bytes)
		rf.buffer = buf
		p.sends, p.recvs, p.bufs = append(p.sends, sf), append(p.recvs, rf), append(p.bufs, buf)
		add(pr.Src, StreamOp{Kind: OpSend, Stream: c.TransferStream(pr.Src), Device: pr.Src, Peer: pr.Dst, Bytes: pr.Bytes, Comm: p.comm.ID, Label: lbl, Future: sf}, i)
		add(pr.Dst, StreamOp{Kind: OpRecv, Stream: c.TransferStream(pr.Dst), Device: pr.Dst, Peer: pr.Src, Bytes: pr.Bytes, Comm: p.comm.ID, Label: lbl, Future: rf}, i)
	}
	for _, d := range order {
		ops := parts[d]
		p.cmds = append(p.cmds, deviceCmd{d, Command{Kind: CmdLaunch, Op: StreamOp{Kind: OpGroup, Stream: ops[0].Stream, Device: d, Peer: -1, Parts: ops}}})
		p.pairOf = append(p.pairOf, pairIdx[d])
	}
	for _, pr := range pairs {
		found := false
		for _, w := range p.waitCmd {
			found = found || w.dev == pr.Src
		}
		if !found {
			p.waitCmd = append(p.waitCmd, deviceCmd{pr.Src, Command{}})
		}
	}
	return p, nil
}

// Execute queues one execution of the plan. The sends wait for ev (the definition event of the source
// buffers; 0 when they are ready): on the device with early enqueue, on the host thread without.
// It fails with ErrInFlight while the previous execution's futures are unresolved.
func (p *Prepared) Execute(ev EventID) error {
	if p.ran {
		for _, f := range p.recvs {
			if !f.Done() {
				return ErrInFlight
			}
		}
		for _, f := range p.sends {
			if !f.Done() {
				return ErrInFlight
			}
		}
	}
	p.ran = true
	for _, f := range p.sends {
		f.reset()
	}
	for _, f := range p.recvs {
		f.reset()
	}
	base := p.c.nextOp
	p.c.nextOp += uint64(len(p.pairs))
	// Pair i gets op id base+1+i on both halves, so each execution's halves match only each other.
	for k := range p.cmds {
		ops := p.cmds[k].cmd.Op.Parts
		for j := range ops {
			ops[j].ID = base + 1 + uint64(p.pairOf[k][j])
			ops[j].Future.op = ops[j].ID
		}
	}
	if ev != 0 {
		for i := range p.waitCmd {
			d := p.waitCmd[i].dev
			if p.c.opts.EarlyEnqueue {
				p.c.submit(d, &Command{Kind: CmdLaunch, Op: StreamOp{Kind: OpWaitEvent, Stream: p.c.TransferStream(d), Device: d, Peer: -1, Event: ev}})
			} else {
				p.c.submit(d, &Command{Kind: CmdHostWait, Event: ev})
			}
		}
	}
	for i := range p.cmds {
		p.c.submit(p.cmds[i].dev, &p.cmds[i].cmd)
	}
	return nil
}

// Sends returns the send futures, one per pair, valid for the latest execution.
func (p *Prepared) Sends() []*Future { return p.sends }

// Recvs returns the receive futures, one per pair; each delivers its pooled buffer.
func (p *Prepared) Recvs() []*Future { return p.recvs }

// Communicator returns the communicator the plan runs on.
func (p *Prepared) Communicator() *Communicator { return p.comm }

// Release returns the plan's receive buffers to the pool; the plan must not be executed again.
func (p *Prepared) Release() {
	for _, b := range p.bufs {
		p.c.pool.Release(b)
	}
	p.bufs = nil
}
