package ras

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/analysis/diagnosis"
	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// realText is the same job moment as realStatus, as ncclras prints it by default (text).
var realText = filepath.Join("..", "testdata", "realjob", "h200-torch2.11-nccl2.28.9", "watch", "ras-status.txt")

// outcome is what an import says, in the terms both formats share: each event (kind, cause,
// status, device, communicator, size, time and label, the communicators' names left out where
// asked) and the diagnosis's findings.
func outcome(t *testing.T, path string, keepNames bool) (events, findings []string) {
	t.Helper()
	im, err := ReadFiles([]string{path})
	if err != nil {
		t.Fatalf("ReadFiles(%s): %v", path, err)
	}
	return outcomeOf(im, keepNames)
}

func outcomeOf(im *kineto.Imported, keepNames bool) (events, findings []string) {
	for _, e := range im.Events {
		msg := im.Strings.Lookup(e.Label)
		if !keepNames {
			msg = hashName(msg)
		}
		events = append(events, fmt.Sprintf("%v sub %d status %d dev %d comm %d ranks %d at %d aux %d: %s",
			e.Kind, e.Sub, e.Status, e.Device, e.Comm, e.Ranks, e.Start, e.Aux, msg))
	}
	d := diagnosis.New(nil)
	for i := range im.Events {
		d.Add(&im.Events[i])
	}
	for _, f := range d.Result(im.Strings) {
		findings = append(findings, fmt.Sprintf("%s rank %d comm %d", f.Kind, f.Rank, f.Comm))
	}
	sort.Strings(findings)
	return events, findings
}

// hashName replaces a communicator's name (its hash, which the text status prints only for a
// communicator in trouble) by a placeholder.
func hashName(msg string) string {
	for _, p := range []string{"RAS communicator ", "RAS: communicator "} {
		if i := strings.Index(msg, p); i >= 0 {
			rest := msg[i+len(p):]
			end := strings.Index(rest, " (")
			if end < 0 {
				end = len(rest)
			}
			msg = msg[:i+len(p)] + "COMM" + rest[end:]
		}
	}
	return msg
}

// TestRealJobTextMatchesJSON: the real job's text status gives the JSON's result: the same
// events (the healthy communicator's mark, and its name apart from the hash the text does not
// print for a healthy communicator), devices, world, and no finding.
func TestRealJobTextMatchesJSON(t *testing.T) {
	je, jf := outcome(t, realStatus, false)
	te, tf := outcome(t, realText, false)
	if !reflect.DeepEqual(je, te) || !reflect.DeepEqual(jf, tf) {
		t.Errorf("text status:\n%s\nfindings %q\nJSON:\n%s\nfindings %q", strings.Join(te, "\n"), tf, strings.Join(je, "\n"), jf)
	}
	if len(te) != 2 || len(tf) != 0 {
		t.Errorf("%d events, %d findings; want the communicator's 2 marks and none", len(te), len(tf))
	}
	jim, _ := ReadFiles([]string{realStatus})
	tim, err := ReadFiles([]string{realText})
	if err != nil {
		t.Fatal(err)
	}
	if tim.Devices != jim.Devices || tim.World != jim.World || tim.Format != Format {
		t.Errorf("text: devices %d world %d format %q; JSON: %d %d", tim.Devices, tim.World, tim.Format, jim.Devices, jim.World)
	}
	// The text names no healthy rank's host: unknown, not guessed.
	if len(tim.RankHosts) != 0 {
		t.Errorf("rank hosts %v from a text status naming none", tim.RankHosts)
	}
}

// TestTextUnhealthyMatchesJSON: statuses in trouble, written as NCCL's client_support.cc prints
// them (a dead and an unresponsive rank; an asynchronous error and a collective count behind;
// an aborted rank, a rank not in the communicator and a rank that launched nothing), give the
// same events, labels included, and findings as the JSON of the same state.
func TestTextUnhealthyMatchesJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"dead-missing", []string{"dead rank rank 3 comm 1", "missing rank rank 2 comm 1"}},
		{"mismatch-async", []string{"hang rank 1 comm 1", "rank error rank 2 comm 1"}},
		{"abort-nocomm", []string{"hang rank 5 comm 1", "missing rank rank 7 comm 1", "rank error rank 5 comm 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join("testdata", "text", c.name)
			je, jf := outcome(t, base+".json", true)
			te, tf := outcome(t, base+".txt", true)
			if !reflect.DeepEqual(je, te) {
				t.Errorf("text events:\n%s\nJSON events:\n%s", strings.Join(te, "\n"), strings.Join(je, "\n"))
			}
			if !reflect.DeepEqual(tf, jf) || !reflect.DeepEqual(tf, c.want) {
				t.Errorf("findings: text %q, JSON %q; want %q", tf, jf, c.want)
			}
		})
	}
}

// textHead is a text status's header, summary and table of one communicator of size ranks.
func textHead(size int, status, errs string) string {
	return "NCCL version 2.28.9+cuda13.0\nCUDA runtime version 13000, driver version 13000\n\nJob summary\n===========\n\n" +
		"  Nodes  Processes         GPUs  Processes     GPUs\n(total)   per node  per process    (total)  (total)\n" +
		fmt.Sprintf("%7d  %9d  %11d  %9d  %7d\n\n", 1, size, 1, size, size) +
		"Communicators... (0.001s)\n=============\n\n" +
		"Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n    #  in group  per comm  per node  per comm  in group\n" +
		fmt.Sprintf("%5d  %8d  %8d  %8d  %8d  %8d  %8s  %6s\n\nErrors\n======\n\n", 0, 1, 1, size, size, size, status, errs)
}

// TestTextUnnamedRanks: ranks the text counts without naming (more than NCCL's outlier
// threshold) are told as so many unnamed ranks, on no device, not given invented numbers.
func TestTextUnnamedRanks(t *testing.T) {
	doc := textHead(24, "RUNNING", "ERROR,MISMATCH") +
		"#0-0 (00000000000000aa) ERROR\n  Asynchronous errors on 12 ranks\n  12 ranks reported System error\n\n" +
		"Warnings\n========\n\n#0-0 (00000000000000aa) MISMATCH\n  Communicator ranks have different AllGather operation counts\n" +
		"  12 ranks have launched up to operation 40\n  12 ranks have launched up to operation 39\n\n"
	path := filepath.Join(t.TempDir(), "ras.txt")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	events, _ := outcome(t, path, true)
	want := []string{
		"12 ranks not named by ncclras's text: asynchronous error 2 (ncclResult)",
		"AllGather counts disagree (MISMATCH): 12 ranks at 40; behind: 12 ranks not named by ncclras's text at 39",
	}
	for _, w := range want {
		found := false
		for _, e := range events {
			if strings.Contains(e, w) && strings.Contains(e, "dev -1 ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no event on no device saying %q in:\n%s", w, strings.Join(events, "\n"))
		}
	}
}

// TestTextErrors: a text status that is cut or altered is an error naming the file, the line
// and what was expected there.
func TestTextErrors(t *testing.T) {
	head := textHead(4, "RUNNING", "ERROR")
	for _, c := range []struct {
		name, doc, want string
	}{
		{"no table", "NCCL version 2.28.9\n\nJob summary\n===========\n", "no communicators table"},
		{"bad row", strings.Replace(head, "RUNNING", "WALKING", 1), `(line 16): not ncclras's text status: "    0         1         1         4         4         4   WALKING   ERROR"; want a communicators table row`},
		{"cut", head, "communicator #0-0 is ERROR in the table, but no entry of Errors or Warnings tells its ranks"},
		{"unknown comm", head + "#1-0 (00000000000000aa) ERROR\n", "(line 21): not ncclras's text status: \"#1-0 (00000000000000aa) ERROR\" names communicator #1-0, not in the communicators table"},
		{"bad rank line", head + "#0-0 (00000000000000aa) ERROR\n  Asynchronous error on 1 rank\n  Rank 2 reported Remote process error -- GPU two\n",
			"(line 23): not ncclras's text status: \"  Rank 2 reported Remote process error -- GPU two\"; want \"-- GPU g managed by process P on node H\""},
		{"unknown error", head + "#0-0 (00000000000000aa) ERROR\n  Asynchronous error on 1 rank\n  Rank 2 reported Bad luck -- [process information not found]\n",
			"(line 23): not ncclras's text status: \"  Rank 2 reported Bad luck -- [process information not found]\" in an ERROR entry"},
		{"rank out of range", head + "#0-0 (00000000000000aa) ERROR\n  Asynchronous error on 1 rank\n  Rank 9 reported Internal error -- [process information not found]\n",
			"communicator 0xaa: rank 9 outside its size 4"},
		{"stray line", head + "Something else\n", "(line 21): not ncclras's text status: \"Something else\"; want an entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseDoc("ras.txt", []byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), "ras.txt") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parseDoc = %v; want an error naming ras.txt and containing %q", err, c.want)
			}
		})
	}
}

// FuzzText: any text status is a document or an error, never a panic, and a document's
// communicators and ranks are in range.
func FuzzText(f *testing.F) {
	for _, p := range []string{realText, "testdata/text/dead-missing.txt", "testdata/text/mismatch-async.txt", "testdata/text/abort-nocomm.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(textHead(24, "RUNNING", "ERROR") + "#0-0 (00000000000000aa) ERROR\n  Initialization errors on 12 ranks\n  12 ranks reported Unexpected error\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := parseText("fuzz", b)
		if err != nil {
			return
		}
		// Bounded by the file, not by the sizes it states: a record per line that names a rank
		// or counts ranks, and at most one per communicator besides.
		records := 0
		for _, c := range doc.Comms {
			records += len(c.Ranks) + len(c.Missing)
		}
		if lines := bytes.Count(b, []byte("\n")) + 1; records > lines+len(doc.Comms) {
			t.Fatalf("%d rank records from %d lines and %d communicators", records, lines, len(doc.Comms))
		}
		if err := checkDoc("fuzz", doc); err != nil {
			return
		}
		im := &kineto.Imported{Extra: map[string]string{}}
		im.Strings = timeline.NewStrings()
		findings(doc, "fuzz", 0, im, &commIDs{})
		rankHosts(doc, im)
	})
}

// TestTextTableSizesNotMaterialised: the table's sizes are the file's word, not its length: a
// group of a thousand communicators of a million ranks, all aborted, is one record each, told
// as so many unnamed ranks.
func TestTextTableSizesNotMaterialised(t *testing.T) {
	doc := strings.Replace(textHead(1<<20, "ABORT", "OK"), "\n    0         1  ", "\n    0      1000  ", 1) + "Warnings\n========\n\n"
	d, err := parseDoc("ras.txt", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Comms) != 1000 {
		t.Fatalf("%d communicators; want 1000", len(d.Comms))
	}
	for i, c := range d.Comms {
		if len(c.Ranks) != 1 || c.Ranks[0].Count != 1<<20 || !c.Ranks[0].Status.Abort || c.Hash != fmt.Sprintf("group 0 #%d", i) {
			t.Fatalf("communicator %d: %s, %d records (first %+v); want group 0 #%d, one record of 1048576 aborted ranks", i, c.Hash, len(c.Ranks), c.Ranks[0], i)
		}
	}
	im := &kineto.Imported{Strings: timeline.NewStrings(), Extra: map[string]string{}}
	findings(&Doc{Comms: d.Comms[:1]}, "ras.txt", 0, im, &commIDs{})
	if got := im.Strings.Lookup(im.Events[len(im.Events)-1].Label); !strings.HasSuffix(got, "1048576 ranks not named by ncclras's text: aborted") {
		t.Errorf("last event %q; want the aborted ranks, counted", got)
	}
}
