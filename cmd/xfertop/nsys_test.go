package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/importers/nsys/nsystest"
)

// nsysSample is a sample Nsight Systems export beside the repository, or the test is skipped.
func nsysSample(t *testing.T, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data", "nsys", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent (the sample Nsight Systems exports live outside the project)", p)
	}
	return p
}

// TestAnalyzeNsys: analyze reads an Nsight Systems export, by content even when it is named .json,
// and several exports as several hosts; convert makes a recording of it that reports the same.
func TestAnalyzeNsys(t *testing.T) {
	src := nsysSample(t, "mfu_2gpu_after.sqlite")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(renamed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := analyzeJSON(t, renamed)
	if r.Backend != "nsys" || r.Devices != 2 || r.Transfers.Count != 904 || len(r.Idle.Devices) != 2 {
		t.Fatalf("backend %s, %d devices, %d transfers, %d device rows", r.Backend, r.Devices, r.Transfers.Count, len(r.Idle.Devices))
	}
	// A second host with the same events: a copy would be refused as the same input given twice,
	// so this one differs in its SQLite header's application id (offset 68), which SQLite ignores.
	data[68] ^= 1
	other := filepath.Join(t.TempDir(), "other.sqlite")
	if err := os.WriteFile(other, data, 0o644); err != nil {
		t.Fatal(err)
	}
	two := analyzeJSON(t, src, other)
	if two.Devices != 4 || two.Transfers.Count != 2*904 || two.Idle.TotalNs != 2*r.Idle.TotalNs {
		t.Fatalf("two exports: %d devices, %d transfers, idle %d (one: %d)", two.Devices, two.Transfers.Count, two.Idle.TotalNs, r.Idle.TotalNs)
	}
	out := filepath.Join(t.TempDir(), "run.xfr")
	if code, _, errs := runCLI(t, "convert", src, out); code != exitOK {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	back := analyzeJSON(t, out)
	if back.Idle.TotalNs != r.Idle.TotalNs || back.Transfers.Bytes != r.Transfers.Bytes || back.Idle.ByCause["host_wait"] != r.Idle.ByCause["host_wait"] {
		t.Fatalf("the recording reports idle %d, %d B, host wait %d; the export %d, %d B, %d", back.Idle.TotalNs, back.Transfers.Bytes,
			back.Idle.ByCause["host_wait"], r.Idle.TotalNs, r.Transfers.Bytes, r.Idle.ByCause["host_wait"])
	}
	code, stdout, _ := runCLI(t, "replay", "--headless", "--json", src)
	if code != exitOK || !strings.Contains(stdout, `"backend": "nsys"`) {
		t.Fatalf("replay of an export: exit %d: %.200s", code, stdout)
	}
}

// TestNsysReport: a .nsys-rep is refused with the command that exports it.
func TestNsysReport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.nsys-rep")
	if err := os.WriteFile(p, []byte("\x00\x01binary report\xff\xfe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"analyze", p}, {"replay", "--headless", p}, {"convert", p, p + ".xfr"}} {
		code, _, errs := runCLI(t, cmd...)
		if code != exitData || !strings.Contains(errs, "this is an Nsight Systems report; run `nsys export --type sqlite FILE` and open the .sqlite") {
			t.Errorf("%v: exit %d: %s", cmd, code, errs)
		}
	}
}

// Nsight Systems exports captured more than a day apart are not one job's: analyze leaves the far
// one out, naming it and the other, and counts only the kept devices; whatif refuses them with exit
// status 4, as it refuses traces a day apart.
func TestExportsOfAnotherDay(t *testing.T) {
	dir := t.TempDir()
	near, far := filepath.Join(dir, "near.sqlite"), filepath.Join(dir, "far.sqlite")
	if err := nsystest.Write(near, nsystest.OldSchema, append(nsystest.OldRows(), `INSERT INTO StringIds VALUES (100, 'near')`)...); err != nil {
		t.Fatal(err)
	}
	rows := nsystest.OldRows()
	for i, r := range rows {
		rows[i] = strings.Replace(r, "(1700000000000000000,", "(1700172800000000000,", 1)
	}
	rows = rows[:len(rows)-1] // fewer events than near: near holds the median start
	if err := nsystest.Write(far, nsystest.OldSchema, rows...); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "analyze", near, far)
	if want := "xfertop: warning: " + far + ": its capture starts 48 h (2.0 days) after the other exports' (" + near + ")"; code != exitOK ||
		!strings.Contains(errs, want) || !strings.Contains(out, "(2 devices)") {
		t.Errorf("analyze: exit %d, stderr %q, report %.300q; want the warning %q and 2 devices", code, errs, out, want)
	}
	code, _, errs = runCLI(t, "whatif", "--json", near, far)
	if want := "xfertop whatif: " + far + ": its capture starts 48 h (2.0 days) after the other exports' (" + near + "): not a capture of the same job"; code != exitData || !strings.Contains(errs, want) {
		t.Errorf("whatif: exit %d, stderr %q; want %d and %q", code, errs, exitData, want)
	}
}
