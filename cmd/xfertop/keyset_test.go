package main

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/report"
)

// mayBeAbsent lists the report's keys that encoding/json leaves out when empty (omitempty), each
// with why its presence follows the source, the workload or the flags, never the backend: the
// cuda and simulator reports of one workload then keep one key set (TestCUDAReportHasSimKeys).
// A key a backend may have and the other not, because of the order or timing of its events (a
// count that is 0 on one, a flag that is false), must always be present instead: late_ns was one.
// Paths are keyPaths', with "*" for a map's key.
var mayBeAbsent = map[string]string{
	".scenario":                           "a scenario ran (a trace or an attached job has none)",
	".knobs":                              "the command line set knobs",
	".gpus_per_host":                      "the source knows its hosts (a trace may not)",
	".ended":                              "the run ended early",
	".steps_from":                         "the input marks no steps",
	".critical_path":                      "asked for (analyze --critical-path, whatif)",
	".critical_path.definition":           "HTA's definition was asked for",
	".export":                             "--otlp",
	".receive":                            "xfertop listen",
	".partial":                            "an input was read in part",
	".mapping":                            "the cuda backend's mapping of ranks onto GPUs: its one documented extra",
	".faults":                             "--fault, or the scenario's own faults, injected",
	".telemetry":                          "--nvml, or samples in the source",
	".profiler_cost":                      "the NCCL profiler plugin measured itself",
	".warnings":                           "attach --ras could not reach NCCL RAS: the flags and the job's, never the backend's",
	".alerts[].root":                      "the diagnosis names the root of a hang the alert is about",
	".findings[].link":                    "a slow link's finding",
	".findings[].switch_port":             "a slow switch port's finding",
	".findings[].hidden":                  "a degraded link's finding whose cost is not what the step waited on",
	".findings[].exposure_ns":             "a degraded link's finding whose cost is not what the step waited on",
	".findings[].coll":                    "a hang's finding",
	".findings[].seq":                     "a hang's finding",
	".findings[].comm":                    "a hang's finding",
	".findings[].missing":                 "a hang's finding with ranks that never entered",
	".findings[].missing_count":           "a hang's finding with ranks that never entered",
	".findings[].stuck":                   "a hang's finding with ranks stuck in the op",
	".findings[].stuck_count":             "a hang's finding with ranks stuck in the op",
	".findings[].entered":                 "a hang matched by sequence number (Flight Recorder)",
	".findings[].waiting":                 "a hang matched by sequence number whose ranks wait in the op",
	".findings[].cycle":                   "a deadlock's finding",
	".links.devices[].unattributed_bytes": "a source that cannot tell a collective's links apart (a trace); the engine's backends place every byte",
	".links.devices[].lower_bound_links":  "links some of whose bytes no source records (HBM under kernels), or ops of unknown size: the workload's",
	".links.fabric":                       "a topology with a fabric between hosts",
	".links.fabric.port_bps":              "the topology gives the fabric ports' bandwidth",
	".links.fabric.hot":                   "the fabric carried bytes",
	".links.fabric.hot[].peak_pct":        "the topology gives the fabric ports' bandwidth",
	".links.fabric.dropped":               "a topology with more switch ports than are counted",
	".transfers.by_kind.*.gbps_min":       "the source's clock ticks in whole µs or coarser (a trace's): both backends stamp ns",
	".transfers.by_kind.*.gbps_max":       "the source's clock ticks in whole µs or coarser (a trace's): both backends stamp ns",
	".transfers.by_size[].gbps_min":       "the source's clock ticks in whole µs or coarser (a trace's): both backends stamp ns",
	".transfers.by_size[].gbps_max":       "the source's clock ticks in whole µs or coarser (a trace's): both backends stamp ns",
}

// omitted walks a decoded JSON value v along the Go type t it was encoded from and returns the
// paths of the keys t declares that v leaves out, where their parent is there (an object, a list's
// element, a map's value), and that mayBeAbsent does not explain. A key is looked for only under a
// parent present in v: a null or empty parent has none.
func omitted(v any, t reflect.Type, path string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" { // an embedded struct's keys are its parent's
				omitted(v, f.Type, path, out)
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := path + "." + name
			fv, ok := obj[name]
			if !ok {
				if _, why := mayBeAbsent[p]; !why {
					out[p] = true
				}
				continue
			}
			omitted(fv, f.Type, p, out)
		}
	case reflect.Slice, reflect.Array:
		list, _ := v.([]any)
		for _, e := range list {
			omitted(e, t.Elem(), path+"[]", out)
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, e := range m {
			omitted(e, t.Elem(), path+".*", out)
		}
	}
}

// omittedKeys decodes a JSON report and lists the keys it leaves out that mayBeAbsent does not
// explain, sorted.
func omittedKeys(t *testing.T, js string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	out := map[string]bool{}
	omitted(v, reflect.TypeOf(report.Report{}), "", out)
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The simulator's JSON report leaves out no key for want of a value that another backend's report
// of the same workload could have (a count of 0, a flag that is false), so the cuda backend's
// report, made from events in another order and at other times, keeps the same key set: each key
// the report declares is there wherever its parent is, unless mayBeAbsent says why its presence
// follows the workload and not the backend. TestCUDAReportHasSimKeys checks the cuda report so.
func TestReportKeysNotLeftOut(t *testing.T) {
	for _, sc := range [][]string{
		{"--scenario", "pipeline", "--steps", "2"},
		{"--scenario", "llm-train", "--steps", "2"},
		{"--scenario", "deadlock"},
		{"--scenario", "straggler", "--steps", "4"},
	} {
		t.Run(strings.Join(sc[1:], " "), func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"run", "--headless", "--json"}, sc...)...)
			if code != exitOK && code != exitAlert {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if keys := omittedKeys(t, out); len(keys) > 0 {
				t.Errorf("keys left out of the report, which another backend's could have: %v", keys)
			}
		})
	}
	if t.Failed() {
		return
	}
	// mayBeAbsent names keys the report has: a key renamed or dropped leaves no stale excuse.
	declared := map[string]bool{}
	declaredKeys(reflect.TypeOf(report.Report{}), "", declared)
	for p := range mayBeAbsent {
		if !declared[p] {
			t.Errorf("mayBeAbsent names %s, which the report does not declare", p)
		}
	}
}

// declaredKeys lists the key paths the Go type t declares, as omitted names them.
func declaredKeys(t reflect.Type, path string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case !f.IsExported() || name == "-":
			case f.Anonymous && name == "":
				declaredKeys(f.Type, path, out)
			default:
				if name == "" {
					name = f.Name
				}
				out[path+"."+name] = true
				declaredKeys(f.Type, path+"."+name, out)
			}
		}
	case reflect.Slice, reflect.Array:
		declaredKeys(t.Elem(), path+"[]", out)
	case reflect.Map:
		declaredKeys(t.Elem(), path+".*", out)
	}
}
