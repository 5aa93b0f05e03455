package scenario

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/fileerr"
	"gopkg.in/yaml.v3"
)

// File is a parsed scenario file, before knobs are applied.
type File struct {
	Source      string // the path, or "builtin:NAME"
	Name        string
	Description string
	Topology    string
	Steps       int
	Knobs       []Knob
	Engine      []Param
	Phases      []Phase
	// Faults are injected into every run of the scenario (engine/fault), after the --fault flags'.
	Faults []fault.Fault
}

// Knob is a named value a user can override with --set.
type Knob struct {
	Name    string
	Default string
	Values  []string // allowed values; empty: any
	Help    string
	Line    int
}

// Param is one key: value setting, with the line it came from.
type Param struct {
	Key   string
	Value string
	Line  int
	// Set is the first knob whose override (Apply's sets, the command line's --set) went into Value,
	// and SetValue that override: a problem with Value is then the override's (a *SetError).
	Set, SetValue string
}

// Phase is one workload pattern of a step with its parameters.
type Phase struct {
	Kind   string
	Params []Param
	Line   int
}

// Error is a problem in a scenario file or in the knobs given to it: it names the file and line.
type Error = fileerr.Error

// SetError is a problem with a knob's value given as an override (xfertop's --set NAME=VALUE, or
// one side of --compare): it names the override first, since that is what the user typed and
// must change, then what the value went into in the file.
type SetError struct {
	Flag  string // the flag that gave the override; "" is --set
	Knob  string
	Value string
	Msg   string // what is wrong
	Where string // where the value went, for instance "it sets pipeline.compute at builtin:pipeline:24"
}

func (e *SetError) Error() string {
	flag, v := e.Flag, e.Value
	if flag == "" {
		flag = "--set"
	}
	if v == "" || strings.ContainsAny(v, " \t\n\"'") {
		v = strconv.Quote(v)
	}
	msg := fmt.Sprintf("%s %s=%s: %s", flag, e.Knob, v, e.Msg)
	if e.Where != "" {
		msg += "; " + e.Where
	}
	return msg
}

var knobName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Parse reads a scenario file. src names it in errors.
func Parse(src string, data []byte) (*File, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fileerr.FromYAML(src, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fileerr.At(src, doc.Line, "a scenario is a mapping with keys name, description, topology, steps, knobs, engine, phases")
	}
	f := &File{Source: src, Steps: 10}
	top := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if seen[k.Value] {
			return nil, fileerr.At(src, k.Line, "%q given twice", k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case "name", "description", "topology":
			if v.Kind != yaml.ScalarNode {
				return nil, fileerr.At(src, v.Line, "%s must be a single value", k.Value)
			}
			switch k.Value {
			case "name":
				f.Name = v.Value
			case "description":
				f.Description = strings.TrimSpace(v.Value)
			case "topology":
				f.Topology = v.Value
			}
		case "steps":
			n, err := parseInt(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
				return nil, fileerr.At(src, v.Line, "steps must be a positive integer, not %q", v.Value)
			}
			f.Steps = int(n)
		case "knobs":
			if v.Kind != yaml.MappingNode {
				return nil, fileerr.At(src, v.Line, "knobs must be a mapping of name: default or name: {default, values, help}")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				kn, err := parseKnob(src, v.Content[j], v.Content[j+1])
				if err != nil {
					return nil, err
				}
				f.Knobs = append(f.Knobs, kn)
			}
		case "engine":
			ps, err := parseParams(src, k.Value, v)
			if err != nil {
				return nil, err
			}
			f.Engine = ps
		case "phases":
			if v.Kind != yaml.SequenceNode {
				return nil, fileerr.At(src, v.Line, "phases must be a list")
			}
			for _, ph := range v.Content {
				if ph.Kind != yaml.MappingNode || len(ph.Content) != 2 {
					return nil, fileerr.At(src, ph.Line, "each phase is a mapping with one key, the pattern (one of %s)", strings.Join(PhaseKinds(), ", "))
				}
				ps, err := parseParams(src, ph.Content[0].Value, ph.Content[1])
				if err != nil {
					return nil, err
				}
				f.Phases = append(f.Phases, Phase{Kind: ph.Content[0].Value, Params: ps, Line: ph.Content[0].Line})
			}
		case "faults":
			fs, err := parseFaults(src, v)
			if err != nil {
				return nil, err
			}
			f.Faults = fs
		default:
			return nil, fileerr.At(src, k.Line, "unknown key %q (known: name, description, topology, steps, knobs, engine, phases, faults)", k.Value)
		}
	}
	if f.Name == "" {
		return nil, fileerr.At(src, top.Line, "the scenario has no name")
	}
	if len(f.Phases) == 0 {
		return nil, fileerr.At(src, top.Line, "the scenario has no phases")
	}
	return f, nil
}

func parseKnob(src string, k, v *yaml.Node) (Knob, error) {
	kn := Knob{Name: k.Value, Line: k.Line}
	if !knobName.MatchString(kn.Name) {
		return kn, fileerr.At(src, k.Line, "knob name %q: use lower-case letters, digits and _", kn.Name)
	}
	switch v.Kind {
	case yaml.ScalarNode:
		kn.Default = v.Value
		return kn, nil
	case yaml.MappingNode:
	default:
		return kn, fileerr.At(src, v.Line, "knob %s: give a default value or a mapping {default, values, help}", kn.Name)
	}
	hasDefault := false
	for j := 0; j+1 < len(v.Content); j += 2 {
		kk, vv := v.Content[j], v.Content[j+1]
		switch kk.Value {
		case "default":
			kn.Default, hasDefault = vv.Value, true
		case "help":
			kn.Help = vv.Value
		case "values":
			if vv.Kind != yaml.SequenceNode {
				return kn, fileerr.At(src, vv.Line, "knob %s: values must be a list", kn.Name)
			}
			for _, x := range vv.Content {
				kn.Values = append(kn.Values, x.Value)
			}
		default:
			return kn, fileerr.At(src, kk.Line, "knob %s: unknown field %q (known: default, values, help)", kn.Name, kk.Value)
		}
	}
	if !hasDefault {
		return kn, fileerr.At(src, k.Line, "knob %s has no default", kn.Name)
	}
	if len(kn.Values) > 0 && !contains(kn.Values, kn.Default) {
		return kn, fileerr.At(src, k.Line, "knob %s: default %q is not one of %s", kn.Name, kn.Default, strings.Join(kn.Values, "|"))
	}
	return kn, nil
}

func parseParams(src, what string, v *yaml.Node) ([]Param, error) {
	if v.Kind == yaml.ScalarNode && v.Value == "" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fileerr.At(src, v.Line, "%s: parameters must be a mapping of key: value", what)
	}
	var ps []Param
	for j := 0; j+1 < len(v.Content); j += 2 {
		kk, vv := v.Content[j], v.Content[j+1]
		p := Param{Key: kk.Value, Line: kk.Line}
		switch vv.Kind {
		case yaml.ScalarNode:
			p.Value = vv.Value
		case yaml.SequenceNode:
			var items []string
			for _, x := range vv.Content {
				if x.Kind != yaml.ScalarNode {
					return nil, fileerr.At(src, x.Line, "%s.%s: list items must be single values", what, p.Key)
				}
				items = append(items, x.Value)
			}
			p.Value = strings.Join(items, ",")
		default:
			return nil, fileerr.At(src, vv.Line, "%s.%s: must be a value or a list of values", what, p.Key)
		}
		for _, q := range ps {
			if q.Key == p.Key {
				return nil, fileerr.At(src, kk.Line, "%s.%s given twice", what, p.Key)
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var knobRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// Apply returns the file's phases and engine settings with knobs substituted: sets overrides the
// knobs' defaults. An unknown knob in sets, a value outside a knob's allowed values, or a reference
// to an unknown knob is an *Error.
func (f *File) Apply(sets map[string]string) (values map[string]string, engine []Param, phases []Phase, err error) {
	values = map[string]string{}
	for _, k := range f.Knobs {
		values[k.Name] = k.Default
	}
	for name, v := range sets {
		var kn *Knob
		for i := range f.Knobs {
			if f.Knobs[i].Name == name {
				kn = &f.Knobs[i]
			}
		}
		if kn == nil {
			return nil, nil, nil, &SetError{Knob: name, Value: v, Msg: fmt.Sprintf("unknown knob %q for scenario %s (knobs: %s)", name, f.Name, strings.Join(f.KnobNames(), ", "))}
		}
		if len(kn.Values) > 0 && !contains(kn.Values, v) {
			return nil, nil, nil, &SetError{Knob: name, Value: v, Msg: "must be one of " + strings.Join(kn.Values, "|"),
				Where: "the knob is declared at " + fileerr.Location(f.Source, kn.Line)}
		}
		values[name] = v
	}
	subst := func(p Param) (Param, error) {
		var bad string
		p.Value = knobRef.ReplaceAllStringFunc(p.Value, func(m string) string {
			name := m[2 : len(m)-1]
			v, ok := values[name]
			if !ok && bad == "" {
				bad = name
			}
			if sv, set := sets[name]; set && p.Set == "" {
				p.Set, p.SetValue = name, sv
			}
			return v
		})
		if bad != "" {
			return p, fileerr.At(f.Source, p.Line, "%s refers to unknown knob ${%s}", p.Key, bad)
		}
		return p, nil
	}
	for _, p := range f.Engine {
		q, err := subst(p)
		if err != nil {
			return nil, nil, nil, err
		}
		engine = append(engine, q)
	}
	for _, ph := range f.Phases {
		out := Phase{Kind: ph.Kind, Line: ph.Line}
		for _, p := range ph.Params {
			q, err := subst(p)
			if err != nil {
				return nil, nil, nil, err
			}
			out.Params = append(out.Params, q)
		}
		phases = append(phases, out)
	}
	return values, engine, phases, nil
}

// KnobNames returns the names of the file's knobs in file order.
func (f *File) KnobNames() []string {
	var out []string
	for _, k := range f.Knobs {
		out = append(out, k.Name)
	}
	return out
}
