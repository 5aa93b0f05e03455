// Package fault describes the faults a run can inject into the simulated cluster: a degraded or
// flapping NIC, a slow NVLink port, a throttled GPU, a host slow to launch, PCIe trained down a
// generation, a rank that hangs before or inside an NCCL op (a collective, a send or a receive), a
// rank that never joins its communicator and, on a topology with a rail fabric, a leaf switch's
// ports to the spines degraded.
// A fault is written as a comma-separated list of key=value pairs (the --fault flag) or as a
// mapping in a scenario file's `faults:` list; both go through Parse.
package fault

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// Kind is what a fault does.
type Kind uint8

// Fault kinds.
const (
	None        Kind = iota
	NICSlow          // a NIC moves factor of its line rate, both directions
	NICFlap          // a NIC goes down (factor of its rate, 0 by default) for half of every period
	NVLinkSlow       // a GPU's NVLink port moves factor of its line rate
	GPUSlow          // a GPU's kernels take 1/factor as long (thermal or power throttling)
	HostSlow         // a GPU's host thread pays delay more per launch (CPU contention)
	PCIeGen          // a GPU's PCIe link trained one generation down: half its bandwidth
	Hang             // a rank hangs at its next NCCL op (of op coll, if named; Target) after at: before it (never posts it) or in it
	MissingRank      // a rank never joins a communicator: its initialisation never completes
	FabricSlow       // a leaf switch's ports to the spines move factor of their rate: needs a rail fabric
)

var kindNames = map[Kind]string{NICSlow: "nic_slow", NICFlap: "nic_flap", NVLinkSlow: "nvlink_slow", GPUSlow: "gpu_slow",
	HostSlow: "host_slow", PCIeGen: "pcie_gen", Hang: "hang", MissingRank: "missing_rank", FabricSlow: "fabric_slow"}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "none"
}

// Kinds lists every fault kind's name, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kindNames))
	for _, n := range kindNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseKind reads a kind's name.
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s {
			return k, true
		}
	}
	return None, false
}

// Fault is one injected fault. Host, GPU and NIC are indices within the topology (GPU and NIC
// within the host); -1 is not given. Group and Rail name a fabric_slow's leaf switch (rail group,
// rail: timeline.PackPort); they are meaningless for other kinds.
type Fault struct {
	Kind   Kind
	Host   int
	GPU    int
	NIC    int
	Group  int
	Rail   int
	Factor float64         // the fraction of the healthy rate left (links, GPU); the down level (nic_flap)
	At     int64           // onset, ns of simulated time
	For    int64           // how long it lasts; 0: to the end of the run
	Period int64           // nic_flap: a down and an up half
	Delay  int64           // host_slow: added host time per launch
	Coll   timeline.CollOp // a hang's collective, when Target is HangColl
	// Target is the op a hang stops at: the default rule, a collective (Coll), sends, receives
	// or any NCCL op.
	Target HangTarget
	// Mode is where a hang stops the rank: before the collective (it never posts it) or in it.
	Mode HangMode
}

// HangTarget is which of a rank's NCCL ops a hang stops at: the first of that kind it reaches
// from the fault's onset on (its `coll` key).
type HangTarget uint8

// Hang targets.
const (
	// HangNext (no coll): the rank's next collective; a rank that has posted no collective
	// before it reaches a send or receive after the onset (a pipeline stage that only sends and
	// receives) hangs at that send or receive instead. A rank that has run collectives keeps
	// hanging at its next collective, so a data-parallel job's pipeline sends do not take the hang.
	HangNext     HangTarget = iota
	HangColl                // coll=<collective>: the next collective of op Coll
	HangSend                // coll=send: the next send
	HangRecv                // coll=recv: the next receive
	HangSendRecv            // coll=send_recv: the next send or receive
	HangAnyOp               // coll=any: the next NCCL op of any kind (collective, send or receive)
)

var targetNames = map[HangTarget]string{HangSend: "send", HangRecv: "recv", HangSendRecv: "send_recv", HangAnyOp: "any"}

// TargetName is how a hang's coll key names its target ("" for the default).
func (f *Fault) TargetName() string {
	if f.Target == HangColl {
		return f.Coll.String()
	}
	return targetNames[f.Target]
}

// parseTarget reads a hang's coll key: a collective's name, send, recv, send_recv or any.
func parseTarget(v string) (HangTarget, timeline.CollOp, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "send":
		return HangSend, 0, true
	case "recv", "receive":
		return HangRecv, 0, true
	case "send_recv", "sendrecv", "p2p":
		return HangSendRecv, 0, true
	case "any", "nccl":
		return HangAnyOp, 0, true
	}
	c, ok := timeline.ParseCollOp(v)
	if !ok || c == timeline.CollSendRecv {
		return 0, 0, false
	}
	return HangColl, c, true
}

// HangMode is where a hung rank stops.
type HangMode uint8

// Hang modes.
const (
	// HangBefore: the rank's host thread never posts the collective; the other ranks wait in it
	// for a rank that never entered it (mode=before, the default).
	HangBefore HangMode = iota
	// HangIn: the rank posts the collective and it starts, but its kernel never finishes (a
	// transfer of it stalls), so the collective never completes on any rank: they are all stuck
	// inside it (mode=in).
	HangIn
)

func (m HangMode) String() string {
	if m == HangIn {
		return "in"
	}
	return "before"
}

// Active reports whether the fault is in effect at time t (for a flapping NIC: in its window, down
// or up).
func (f *Fault) Active(t int64) bool {
	return t >= f.At && (f.For == 0 || t < f.At+f.For)
}

// Device is the global device the fault names (a GPU, or the first GPU a NIC serves), in topo.
func (f *Fault) Device(topo engine.Topology) engine.DeviceID {
	g := f.GPU
	if g < 0 && f.NIC >= 0 {
		g = f.NIC * topo.GPUsPerHost / max(topo.NICs.PerHost, 1)
	}
	return engine.DeviceID(f.Host*topo.GPUsPerHost + max(g, 0))
}

// Devices lists the GPUs the fault acts on: the GPUs a NIC serves (a host's NICs are shared evenly
// by its GPUs), the one GPU named, or every GPU of a host named alone (host_slow).
// A fabric_slow acts on no GPU: nil.
func (f *Fault) Devices(topo engine.Topology) []engine.DeviceID {
	if f.Kind == FabricSlow {
		return nil
	}
	if f.NIC < 0 && f.GPU < 0 {
		out := make([]engine.DeviceID, topo.GPUsPerHost)
		for g := range out {
			out[g] = engine.DeviceID(f.Host*topo.GPUsPerHost + g)
		}
		return out
	}
	if f.NIC < 0 {
		return []engine.DeviceID{f.Device(topo)}
	}
	nics := max(topo.NICs.PerHost, 1)
	var out []engine.DeviceID
	for g := range topo.GPUsPerHost {
		if g*nics/topo.GPUsPerHost == f.NIC || (nics > topo.GPUsPerHost && f.NIC*topo.GPUsPerHost/nics == g) {
			out = append(out, engine.DeviceID(f.Host*topo.GPUsPerHost+g))
		}
	}
	return out
}

// String writes the fault as the flag reads it.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString("kind=" + f.Kind.String())
	if f.GPU < -1 {
		fmt.Fprintf(&b, ",rank=%d", -2-f.GPU)
	}
	if f.Host >= 0 {
		fmt.Fprintf(&b, ",host=%d", f.Host)
	}
	if f.GPU >= 0 {
		fmt.Fprintf(&b, ",gpu=%d", f.GPU)
	}
	if f.NIC >= 0 {
		fmt.Fprintf(&b, ",nic=%d", f.NIC)
	}
	if f.Kind == FabricSlow {
		fmt.Fprintf(&b, ",group=%d,rail=%d", f.Group, f.Rail)
	}
	switch f.Kind {
	case NICSlow, NVLinkSlow, GPUSlow, NICFlap, FabricSlow:
		fmt.Fprintf(&b, ",factor=%g", f.Factor)
	}
	if f.Kind == NICFlap {
		fmt.Fprintf(&b, ",period=%v", time.Duration(f.Period))
	}
	if f.Kind == HostSlow {
		fmt.Fprintf(&b, ",delay=%v", time.Duration(f.Delay))
	}
	if f.Kind == Hang && f.Target != HangNext {
		b.WriteString(",coll=" + f.TargetName())
	}
	if f.Kind == Hang && f.Mode != HangBefore {
		b.WriteString(",mode=" + f.Mode.String())
	}
	fmt.Fprintf(&b, ",at=%v", time.Duration(f.At))
	if f.For > 0 {
		fmt.Fprintf(&b, ",for=%v", time.Duration(f.For))
	}
	return b.String()
}

// keys each kind takes besides kind, at and for; the first group is required.
var kindKeys = map[Kind][2][]string{
	NICSlow:     {{"host", "nic", "factor"}, nil},
	NICFlap:     {{"host", "nic"}, {"period", "factor"}},
	NVLinkSlow:  {{"host", "gpu", "factor"}, nil},
	GPUSlow:     {{"host", "gpu", "factor"}, nil},
	HostSlow:    {{"host", "delay"}, {"gpu"}},
	PCIeGen:     {{"host", "gpu"}, nil},
	Hang:        {{"host", "gpu"}, {"coll", "mode"}},
	MissingRank: {{"host", "gpu"}, nil},
	FabricSlow:  {{"group", "rail", "factor"}, nil},
}

// Parse reads a fault written as key=value pairs separated by commas:
// kind=nic_slow,host=37,nic=3,factor=0.3,at=2s,for=5s. rank=N may stand for host and gpu.
func Parse(spec string) (Fault, error) {
	kv := map[string]string{}
	var order []string
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return Fault{}, fmt.Errorf("%q is not key=value", part)
		}
		k = strings.TrimSpace(k)
		if _, dup := kv[k]; dup {
			return Fault{}, fmt.Errorf("%s given twice", k)
		}
		kv[k] = strings.TrimSpace(v)
		order = append(order, k)
	}
	return FromMap(kv, order)
}

// FromMap builds a fault from its keys and values (order: the keys as written, for errors that
// name the first unknown one).
func FromMap(kv map[string]string, order []string) (Fault, error) {
	f := Fault{Host: -1, GPU: -1, NIC: -1}
	kn, ok := kv["kind"]
	if !ok {
		return f, fmt.Errorf("kind is missing (one of %s)", strings.Join(Kinds(), ", "))
	}
	if f.Kind, ok = ParseKind(kn); !ok {
		return f, fmt.Errorf("kind %q is not a fault kind (one of %s)", kn, strings.Join(Kinds(), ", "))
	}
	keys := kindKeys[f.Kind]
	allowed := map[string]bool{"kind": true, "at": true, "for": true}
	for _, k := range append(append([]string{}, keys[0]...), keys[1]...) {
		allowed[k] = true
	}
	if allowed["host"] && allowed["gpu"] {
		allowed["rank"] = true
	}
	if _, ok := kv["for"]; ok && !lasts(f.Kind) {
		return f, fmt.Errorf("%s takes no key \"for\": %s", f.Kind, whyNoFor[f.Kind])
	}
	for _, k := range order {
		if !allowed[k] {
			names := make([]string, 0, len(allowed))
			for a := range allowed {
				names = append(names, a)
			}
			sort.Strings(names)
			return f, fmt.Errorf("%s takes no key %q (keys: %s)", f.Kind, k, strings.Join(names, ", "))
		}
	}
	if r, ok := kv["rank"]; ok {
		if _, h := kv["host"]; h {
			return f, fmt.Errorf("give rank or host and gpu, not both")
		}
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 {
			return f, fmt.Errorf("rank %q is not a rank number", r)
		}
		f.GPU = -2 - n // resolved against the topology by Bind
		kv["host"], kv["gpu"] = "0", "0"
	}
	for _, k := range keys[0] {
		if _, ok := kv[k]; !ok {
			return f, fmt.Errorf("%s needs %s", f.Kind, strings.Join(keys[0], ", "))
		}
	}
	var err error
	ints := map[string]*int{"host": &f.Host, "nic": &f.NIC, "group": &f.Group, "rail": &f.Rail}
	if f.GPU == -1 {
		ints["gpu"] = &f.GPU
	}
	for k, p := range ints {
		if v, ok := kv[k]; ok {
			if *p, err = strconv.Atoi(v); err != nil || *p < 0 {
				return f, fmt.Errorf("%s %q is not a non-negative integer", k, v)
			}
		}
	}
	if f.GPU < -1 {
		f.Host = -1
	}
	f.Factor = 1
	if f.Kind == NICFlap {
		f.Factor = 0
	}
	if f.Kind == PCIeGen {
		f.Factor = 0.5
	}
	if v, ok := kv["factor"]; ok {
		f.Factor, err = strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f.Factor) || f.Factor < 0 || f.Factor >= 1 || (f.Factor == 0 && f.Kind != NICFlap) {
			return f, fmt.Errorf("factor %q must be a number in (0, 1): the fraction of the healthy rate left", v)
		}
	}
	// In a fixed order, so that a spec with two bad durations always names the same one.
	durs := []struct {
		key string
		to  *int64
	}{{"at", &f.At}, {"for", &f.For}, {"period", &f.Period}, {"delay", &f.Delay}}
	for _, du := range durs {
		if v, ok := kv[du.key]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return f, fmt.Errorf("%s %q is not a duration (examples: 150us, 2s)", du.key, v)
			}
			if d < 0 {
				return f, fmt.Errorf("%s %q: must not be negative", du.key, v)
			}
			*du.to = int64(d)
		}
	}
	if f.Kind == NICFlap {
		if _, set := kv["period"]; !set {
			f.Period = int64(time.Second)
		} else if f.Period < int64(minFlapPeriod) {
			// Each half period is a change of the link's rate that re-solves its flows: a period of
			// nanoseconds would take the simulator hours for a second of the run.
			return f, fmt.Errorf("period %q must be at least %v (a NIC down for half of each period)", kv["period"], minFlapPeriod)
		}
	}
	if f.Kind == HostSlow && f.Delay <= 0 {
		return f, fmt.Errorf("host_slow needs a positive delay (the host time added to each launch)")
	}
	if v, ok := kv["coll"]; ok {
		t, c, ok := parseTarget(v)
		if !ok {
			return f, fmt.Errorf("coll %q is not an NCCL op (a collective: all_reduce, all_gather, reduce_scatter, all_to_all, ragged_all_to_all, broadcast, reduce; or send, recv, send_recv, any)", v)
		}
		f.Target, f.Coll = t, c
	}
	switch v := kv["mode"]; v {
	case "", "before":
	case "in":
		f.Mode = HangIn
	default:
		return f, fmt.Errorf("mode %q is not a hang mode (before: the rank never posts the op; in: it posts it and never finishes)", v)
	}
	return f, nil
}

// lasts reports whether a fault of kind k may last a while (its for key): a hang and a missing rank
// last to the end of the run by what they are.
func lasts(k Kind) bool { return whyNoFor[k] == "" }

// whyNoFor says why a kind takes no for. A hang that ends is no hang: the rank would post its op
// late or finish it late, which the diagnosis rightly takes for a long wait (a hang it named is
// withdrawn when its op completes), so such a run would end with no finding at all; and a
// rank that joins late is no missing rank. Refused, rather than run with a verdict that cannot
// match it.
var whyNoFor = map[Kind]string{
	Hang: "a hang lasts to the end of the run (the rank never posts its op, or never finishes it: the watchdog or a deadlock ends the run); " +
		"one that ended would be a long wait, which the diagnosis does not call a hang. For a rank slow for a while use host_slow or gpu_slow with for",
	MissingRank: "a missing rank never joins its communicator (its initialisation never completes); one that joined late would be a slow initialisation, not a missing rank",
}

// minFlapPeriod is the shortest nic_flap period taken.
const minFlapPeriod = 100 * time.Microsecond

// Bind checks the fault against topo (every index in range) and resolves rank=N.
func (f *Fault) Bind(topo engine.Topology) error {
	if f.GPU < -1 {
		r := -2 - f.GPU
		if r >= topo.Devices() {
			return fmt.Errorf("%s: rank %d is out of range (the topology has %d GPUs)", f.Kind, r, topo.Devices())
		}
		f.Host, f.GPU = r/topo.GPUsPerHost, r%topo.GPUsPerHost
	}
	if f.Kind == FabricSlow {
		return f.bindLeaf(topo)
	}
	if f.Host >= topo.Hosts {
		return fmt.Errorf("%s: host %d is out of range (topology %s has %d hosts)", f.Kind, f.Host, topo.Name, topo.Hosts)
	}
	if f.GPU >= topo.GPUsPerHost {
		return fmt.Errorf("%s: gpu %d is out of range (topology %s has %d GPUs per host)", f.Kind, f.GPU, topo.Name, topo.GPUsPerHost)
	}
	if f.NIC >= 0 {
		if topo.NICs.PerHost == 0 {
			return fmt.Errorf("%s: topology %s has no NICs", f.Kind, topo.Name)
		}
		if f.NIC >= topo.NICs.PerHost {
			return fmt.Errorf("%s: nic %d is out of range (topology %s has %d NICs per host)", f.Kind, f.NIC, topo.Name, topo.NICs.PerHost)
		}
	}
	if f.Kind == NVLinkSlow && topo.Interconnect == engine.PCIeOnly {
		return fmt.Errorf("nvlink_slow: topology %s has no NVLink", topo.Name)
	}
	return nil
}

// ErrNotOnRealGPUs is wrapped by OnRealGPUs's errors.
var ErrNotOnRealGPUs = errors.New("the cuda backend cannot inject it")

// OnRealGPUs reports whether a backend on real GPUs (engine/cuda) can inject the fault honestly,
// and if not, why. It can hold back a rank's host thread: a host slow to launch (each launch
// waits delay) and a rank that hangs before a collective (its host thread never launches it).
// It cannot change what the hardware does.
func (f *Fault) OnRealGPUs() error {
	why := ""
	switch f.Kind {
	case HostSlow:
		return nil
	case Hang:
		if f.Mode == HangBefore {
			return nil
		}
		why = "a real NCCL kernel cannot be made to stall once every rank has launched it (mode=before can: the rank never launches it)"
	case NICSlow, NICFlap, NVLinkSlow, PCIeGen, FabricSlow:
		why = "a real link's rate is the hardware's: it cannot be degraded, flapped or trained down on request"
	case GPUSlow:
		why = "a real GPU cannot be throttled on request (its clocks are the driver's; locking them lower needs root and slows every process on it)"
	case MissingRank:
		why = "the ranks of one process initialise each communicator together (one NCCL group): one rank cannot be left out of it"
	default:
		why = "it is not a fault kind"
	}
	return fmt.Errorf("%s: %w: %s", f.Kind, ErrNotOnRealGPUs, why)
}

// HangsAt reports whether op is (or, a group, holds) the op a hang fault stops at. collBefore
// says whether the rank has posted a collective before op: under the default rule (HangNext) a
// rank that has not hangs at a send or receive too.
func (f *Fault) HangsAt(op *engine.StreamOp, collBefore bool) bool {
	switch op.Kind {
	case engine.OpCollective:
		switch f.Target {
		case HangNext, HangAnyOp:
			return true
		case HangColl:
			return op.Coll == f.Coll
		}
		return false
	case engine.OpSend, engine.OpRecv:
		switch f.Target {
		case HangNext:
			return !collBefore
		case HangAnyOp, HangSendRecv:
			return true
		case HangSend:
			return op.Kind == engine.OpSend
		case HangRecv:
			return op.Kind == engine.OpRecv
		}
		return false
	}
	for i := range op.Parts {
		if f.HangsAt(&op.Parts[i], collBefore) {
			return true
		}
	}
	return false
}

// PostsCollective reports whether op is (or, a group, holds) a collective: once a rank has posted
// one, the default hang rule keeps to collectives (HangNext).
func PostsCollective(op *engine.StreamOp) bool {
	if op.Kind == engine.OpCollective {
		return true
	}
	for i := range op.Parts {
		if PostsCollective(&op.Parts[i]) {
			return true
		}
	}
	return false
}

// bindLeaf checks a fabric_slow's leaf against topo's rail fabric.
func (f *Fault) bindLeaf(topo engine.Topology) error {
	if topo.Fabric.Kind != engine.FabricRail || topo.Hosts < 2 {
		return fmt.Errorf("fabric_slow: topology %s has no switch fabric (a topology file's fabric: kind: rail, docs/topologies.md)", topo.Name)
	}
	if f.Group >= topo.RailGroups() {
		return fmt.Errorf("fabric_slow: group %d is out of range (topology %s has %d rail groups)", f.Group, topo.Name, topo.RailGroups())
	}
	if f.Rail >= topo.GPUsPerHost {
		return fmt.Errorf("fabric_slow: rail %d is out of range (topology %s has %d rails)", f.Rail, topo.Name, topo.GPUsPerHost)
	}
	return nil
}
