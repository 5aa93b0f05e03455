// Package ras reads what ncclras prints, its text status (the default) or `ncclras -f json`
// (NCCL ≥ 2.28.7): the job's communicators as
// NCCL's RAS subsystem collected them, each with the ranks that answered (host, pid, GPU, status,
// collective counts) and the ranks that did not; from a file, or polled from a running job's RAS
// port (Client, Poller: NCCL's RAS client protocol, as ncclras speaks it). What RAS states
// becomes alert events, each with its cause (timeline.AlertRankDead, …) for the diagnosis to make
// a finding of: ranks missing from a communicator (unresponsive, or considered dead), ranks whose
// collective counts disagree with their peers' (the ones behind have not entered the collective
// the others are in), ranks with an asynchronous error, an abort or a failed init, and
// communicators fewer ranks reported on than their size. A healthy communicator is a mark saying
// so, so that a clean job's report says what was checked.
package ras

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/xfertop/xfertop/importers/kineto"
	"github.com/xfertop/xfertop/timeline"
)

// Format names the importer.
const Format = "nccl-ras"

// MaxInputBytes bounds the JSON read from one file.
const MaxInputBytes = 256 << 20

// maxRanks bounds a communicator's size and ranks.
const maxRanks = 1 << 20

// Doc is ncclras's JSON document.
type Doc struct {
	NCCLVersion string `json:"nccl_version"`
	Timestamp   string `json:"timestamp"`
	CommsCount  *int   `json:"communicators_count"`
	Comms       []Comm `json:"communicators"`
	RAS         struct {
		CollectionSec float64 `json:"collection_time_sec"`
		Timeouts      int     `json:"timeouts_count"`
	} `json:"ras"`
}

// Comm is one communicator.
type Comm struct {
	Hash         string `json:"hash"`
	Size         int    `json:"size"`
	RanksCount   int    `json:"ranks_count"`
	MissingCount int    `json:"missing_ranks_count"`
	Ranks        []Rank `json:"ranks"`
	Missing      []Rank `json:"missing_ranks"`

	// From the text status: text is set, answered counts the ranks that answered (Ranks names
	// only some), and counted holds each disagreeing collective's counts as the text groups them.
	text     bool
	answered int
	counted  map[string][]countGroup
}

// Rank is one rank of a communicator, answering or missing.
type Rank struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Pid    int64  `json:"pid"`
	Dev    int    `json:"cuda_dev"`
	Status struct {
		InitState    int  `json:"init_state"`
		AsyncError   int  `json:"async_error"`
		Finalize     bool `json:"finalize_called"`
		Destroy      bool `json:"destroy_flag"`
		Abort        bool `json:"abort_flag"`
		Unresponsive bool `json:"unresponsive"`
		Dead         bool `json:"considered_dead"`
	} `json:"status"`
	Counts map[string]uint64 `json:"collective_counts"`
	// Count, when positive, makes the record stand for that many ranks the text status counts
	// without naming them (Rank is then -1, its process unknown).
	Count int `json:"-"`
}

// Sniff reports whether a file's first bytes are ncclras's JSON or its text status.
func Sniff(head []byte) bool {
	return sniffJSON(head) || SniffText(head)
}

// sniffJSON reports whether a file's first bytes are ncclras's JSON.
func sniffJSON(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{' && bytes.Contains(t, []byte(`"nccl_version"`)) &&
		(bytes.Contains(t, []byte(`"communicators`)) || bytes.Contains(t, []byte(`"cuda_runtime_version"`)))
}

// ReadFiles reads ncclras JSON documents (one per file: several are one job's, taken at
// different times) into findings.
func ReadFiles(paths []string) (*kineto.Imported, error) {
	im := &kineto.Imported{Strings: timeline.NewStrings(), Source: strings.Join(paths, ", "), Format: Format, Extra: map[string]string{}}
	var ids commIDs
	for _, p := range paths {
		doc, err := readDoc(p)
		if err != nil {
			return nil, err
		}
		at := docTime(doc)
		if im.EpochUnixNs == 0 || (at != 0 && at < im.EpochUnixNs) {
			im.EpochUnixNs = at
		}
		findings(doc, p, at, im, &ids)
		rankHosts(doc, im)
		// RAS lists each communicator's ranks with their GPUs: they are the job's devices even
		// where nothing is wrong with them (no event of theirs names them).
		for _, c := range doc.Comms {
			im.Devices = max(im.Devices, c.Size)
		}
	}
	for i := range im.Events {
		e := &im.Events[i]
		if e.Start != 0 {
			e.Start -= im.EpochUnixNs
			e.End = e.Start
		}
		im.Devices = max(im.Devices, int(e.Device)+1)
	}
	sort.SliceStable(im.Events, func(a, b int) bool { return im.Events[a].Start < im.Events[b].Start })
	return im, nil
}

// rankHosts records the job's size (its widest communicator's) and each of its ranks' hosts in
// im, for a join with the job's other sources (join.Parts): RAS names every rank's host, the
// missing ones' too.
func rankHosts(doc *Doc, im *kineto.Imported) {
	best := widest(doc)
	if best < 0 {
		return
	}
	c := &doc.Comms[best]
	im.World = max(im.World, c.Size)
	if im.RankHosts == nil {
		im.RankHosts = map[int32]string{}
	}
	for _, rs := range [][]Rank{c.Ranks, c.Missing} {
		for _, r := range rs {
			if _, ok := im.RankHosts[int32(r.Rank)]; !ok && r.Host != "" && r.Rank >= 0 {
				im.RankHosts[int32(r.Rank)] = r.Host
			}
		}
	}
}

// readDoc reads and checks one document.
func readDoc(path string) (*Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxInputBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: not one ncclras document", path, MaxInputBytes)
	}
	return parseDoc(path, b)
}

// checkDoc checks a document's communicators and ranks are in range.
func checkDoc(name string, doc *Doc) error {
	for i, c := range doc.Comms {
		if c.Size <= 0 || c.Size > maxRanks || len(c.Ranks)+len(c.Missing) > maxRanks {
			return fmt.Errorf("%s: communicator %d (%s): size %d out of range", name, i, c.Hash, c.Size)
		}
		for _, r := range append(append([]Rank(nil), c.Ranks...), c.Missing...) {
			if r.Count > 0 && r.Rank == -1 {
				continue // ranks the text status counts without naming
			}
			if r.Rank < 0 || r.Rank >= c.Size {
				return fmt.Errorf("%s: communicator %s: rank %d outside its size %d", name, c.Hash, r.Rank, c.Size)
			}
		}
	}
	return nil
}

// docTime is the document's timestamp ("%F %T", local time of the host ncclras ran on) in Unix
// ns; 0 when it has none.
func docTime(doc *Doc) int64 {
	for _, layout := range []string{"2006-01-02 15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, doc.Timestamp, time.Local); err == nil {
			return t.UnixNano()
		}
	}
	return 0
}
