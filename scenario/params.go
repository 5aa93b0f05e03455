package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/fileerr"
)

// params reads one phase's (or the engine section's) parameters with types, remembering the first
// error with its line, and which keys were read so unknown ones can be reported.
type params struct {
	src  string
	what string
	line int
	m    map[string]Param
	used map[string]bool
	err  error
}

func newParams(src, what string, line int, ps []Param) *params {
	p := &params{src: src, what: what, line: line, m: map[string]Param{}, used: map[string]bool{}}
	for _, x := range ps {
		p.m[x.Key] = x
	}
	return p
}

func (p *params) get(key string) (Param, bool) {
	p.used[key] = true
	x, ok := p.m[key]
	return x, ok
}

// fail remembers the first problem: a value that came from a knob's override is the override's
// (a *SetError naming it), any other the file's.
func (p *params) fail(x Param, format string, args ...any) {
	switch {
	case p.err != nil:
	case x.Set != "":
		p.err = &SetError{Knob: x.Set, Value: x.SetValue, Msg: fmt.Sprintf(format, args...),
			Where: fmt.Sprintf("it sets %s.%s at %s", p.what, x.Key, fileerr.Location(p.src, x.Line))}
	default:
		p.err = fileerr.At(p.src, x.Line, "%s.%s: %s", p.what, x.Key, fmt.Sprintf(format, args...))
	}
}

func (p *params) str(key, def string, allowed ...string) string {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	if len(allowed) > 0 && !contains(allowed, x.Value) {
		p.fail(x, "%q must be one of %s", x.Value, strings.Join(allowed, "|"))
	}
	return x.Value
}

func (p *params) integer(key string, def, lo, hi int64) int64 {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	v, err := parseInt(x.Value)
	if err != nil {
		p.fail(x, "%q is not an integer", x.Value)
		return def
	}
	if v < lo || v > hi {
		p.fail(x, "%d is out of range [%d, %d]", v, lo, hi)
	}
	return v
}

func (p *params) float(key string, def, lo, hi float64) float64 {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(x.Value), 64)
	if err != nil || v < lo || v > hi {
		p.fail(x, "%q is not a number in [%g, %g]", x.Value, lo, hi)
		return def
	}
	return v
}

func (p *params) size(key string, def int64) int64 {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	v, err := ParseSize(x.Value)
	if err != nil {
		p.fail(x, "%v", err)
	}
	return v
}

func (p *params) dur(key string, def int64) int64 {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	d, err := ParseDuration(x.Value)
	if err != nil {
		p.fail(x, "%v", err)
	}
	return d.Nanoseconds()
}

func (p *params) boolean(key string, def bool) bool {
	x, ok := p.get(key)
	if !ok {
		return def
	}
	v, err := ParseBool(x.Value)
	if err != nil {
		p.fail(x, "%v", err)
	}
	return v
}

// ranks reads a device list: "all", "host1", "0-7", "0,2,4" or a YAML list.
func (p *params) ranks(key string, topo engine.Topology) []engine.DeviceID {
	all := topo.AllDevices()
	x, ok := p.get(key)
	if !ok || x.Value == "all" {
		return all
	}
	if strings.HasPrefix(x.Value, "host") {
		h, err := strconv.Atoi(strings.TrimPrefix(x.Value, "host"))
		if err != nil || h < 0 || h >= topo.Hosts {
			p.fail(x, "%q: topology %s has hosts 0..%d", x.Value, topo.Name, topo.Hosts-1)
			return all
		}
		return all[h*topo.GPUsPerHost : (h+1)*topo.GPUsPerHost]
	}
	var out []engine.DeviceID
	seen := map[engine.DeviceID]bool{}
	for _, part := range strings.Split(x.Value, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			p.fail(x, "%q is not a device list (examples: all, host1, 0-7, 0,2,4)", x.Value)
			return all
		}
		for d := a; d <= b; d++ {
			id := engine.DeviceID(d)
			if !topo.Valid(id) {
				p.fail(x, "device %d does not exist: topology %s has devices 0..%d", d, topo.Name, topo.Devices()-1)
				return all
			}
			if seen[id] {
				p.fail(x, "device %d is listed twice", d)
				return all
			}
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// done reports the first error, or an unknown key among the parameters.
func (p *params) done() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for k := range p.m {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(p.used))
		for k := range p.used {
			known = append(known, k)
		}
		sort.Strings(known)
		return fileerr.At(p.src, p.m[unknown[0]].Line, "%s: unknown parameter %q (known: %s)", p.what, unknown[0], strings.Join(known, ", "))
	}
	return nil
}
