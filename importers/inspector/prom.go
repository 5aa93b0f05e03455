package inspector

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// promSeries is one series of a Prometheus dump: its labels, and the metrics read for it.
type promSeries struct {
	labels map[string]string
	busbw  float64
	execUs float64
	has    uint8 // bits: 1 busbw, 2 exec time
	line   int   // its first line
	// bwLine and execLine are the lines its busbw and its exec time were read on.
	bwLine, execLine int
}

// readProm reads one Prometheus textfile dump into st: each series (a collective or p2p
// operation, a message-size bucket, an algorithm and protocol, on one GPU of one communicator)
// becomes one operation of the bucket's smallest size lasting the mean exec time, at dumpNs (the
// file's modification time), since the dump holds aggregates, not operations.
func (st *state) readProm(path string, r io.Reader, dumpNs int64) error {
	lr := newLineReader(r, st.opts.MaxLineBytes)
	series := map[string]*promSeries{}
	var order []string
	for {
		b, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errLineTooLong) {
			return &LimitError{File: path, Line: lr.n, What: "bytes in one line", Limit: int64(st.opts.MaxLineBytes)}
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, lr.n+1, err)
		}
		l := strings.TrimSpace(string(b))
		if l == "" || l[0] == '#' {
			continue
		}
		name, labels, value, err := parsePromLine(l)
		if err != nil {
			return fmt.Errorf("%s:%d: not a Prometheus sample: %w", path, lr.n, err)
		}
		var bit uint8
		switch name {
		case "nccl_bus_bandwidth_gbs", "nccl_p2p_bus_bandwidth_gbs":
			bit = 1
		case "nccl_collective_exec_time_microseconds", "nccl_p2p_exec_time_microseconds":
			bit = 2
		default:
			continue // algorithm bandwidth, counters: not an operation's
		}
		key := seriesKey(labels)
		s := series[key]
		if s == nil {
			if len(series) >= st.opts.MaxRecords {
				return &LimitError{File: path, Line: lr.n, What: "series", Limit: int64(st.opts.MaxRecords)}
			}
			s = &promSeries{labels: labels, line: lr.n}
			series[key] = s
			order = append(order, key)
		}
		if bit == 1 {
			s.busbw, s.bwLine = value, lr.n
		} else {
			s.execUs, s.execLine = value, lr.n
		}
		s.has |= bit
	}
	for i, key := range order {
		s := series[key]
		if !st.promValues(path, s) {
			continue
		}
		if err := st.promOp(path, s, dumpNs, uint64(i)); err != nil {
			return err
		}
	}
	return nil
}

// promValues checks a series' values, as a log's numbers are checked: an exec time that is not a
// time (NaN, negative, past a day) leaves the series out, a busbw that is not a rate leaves the
// busbw out; each with a warning naming the line it is on. It reports whether the series stays.
func (st *state) promValues(path string, s *promSeries) bool {
	if s.has&1 != 0 && (math.IsNaN(s.busbw) || math.IsInf(s.busbw, 0) || s.busbw < 0) {
		st.warn.add(fmt.Sprintf("%s:%d: busbw %v is not a rate: left out", path, s.bwLine, s.busbw))
		s.has &^= 1
	}
	switch {
	case s.has&2 == 0:
		st.warn.add(fmt.Sprintf("%s:%d: the series has no exec time: left out", path, s.line))
		return false
	case math.IsNaN(s.execUs) || s.execUs < 0 || s.execUs > maxExecUs:
		st.warn.add(fmt.Sprintf("%s:%d: exec time %v µs is not a time: the series is left out", path, s.execLine, s.execUs))
		return false
	}
	return true
}

// promOp turns one series into an operation.
func (st *state) promOp(path string, s *promSeries, dumpNs int64, sn uint64) error {
	where := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", path, s.line, fmt.Sprintf(format, a...))
	}
	lb := s.labels
	nranks, err := strconv.Atoi(lb["nranks"])
	if err != nil || nranks <= 0 || nranks > maxRanks {
		return where("label nranks %q is not a rank count", lb["nranks"])
	}
	gpu, ok := strings.CutPrefix(lb["gpu"], "GPU")
	g, err := strconv.Atoi(gpu)
	if !ok || err != nil || g < 0 || g >= maxRanks {
		return where("label gpu %q is not GPU<n>", lb["gpu"])
	}
	size, err := bucketLow(lb["message_size"])
	if err != nil {
		return where("label message_size: %v", err)
	}
	// The dump names the communicator, not its id: the name and size stand for it.
	h := &header{ID: "prom:" + lb["comm_name"] + "/" + lb["nranks"], CommName: lb["comm_name"], NRanks: nranks}
	proc, err := st.process(path, s.line, lb["node"], int64(g))
	if err != nil {
		return err
	}
	comm, err := st.comm(path, s.line, h)
	if err != nil {
		return err
	}
	op := &perf{Op: lb["collective"], SN: sn, Bytes: &size, ExecUs: &s.execUs}
	if p := lb["p2p_operation"]; p != "" {
		op.Op, op.p2p = p, true
	}
	if ap := lb["algo_proto"]; ap != "" {
		if i := strings.LastIndexByte(ap, '_'); i > 0 {
			op.Algo, op.Proto = ap[:i], ap[i+1:]
		}
	}
	if s.has&1 != 0 {
		op.BusBW = &s.busbw
	}
	if len(st.recs) >= st.opts.MaxRecords {
		return &LimitError{File: path, Line: s.line, What: "operations", Limit: int64(st.opts.MaxRecords)}
	}
	// No rank is written: the GPU's index on its node stands for it within the communicator.
	r := rec{proc: proc, comm: comm, rank: int32(g), peer: -1, nranks: uint16(nranks), execNs: -1, queued: -1, dumpNs: dumpNs, sn: sn, series: true}
	if err := st.fill(&r, op); err != nil {
		return where("%v", err)
	}
	if n, err := strconv.Atoi(lb["n_nodes"]); err == nil {
		r.aux |= hostsAux(r.kind, n)
	}
	r.label += " geometric mean over the dump, bucket " + lb["message_size"]
	st.plausible(path, s.execLine, &r)
	st.versions["prometheus "+lb["version"]]++
	st.prom++
	st.note(proc, comm, r.rank, nranks)
	st.recs = append(st.recs, r)
	return nil
}

// bucketLow is the smallest size of a message_size bucket ("4-5GB": 4 GiB; units are powers of
// 1024, as Inspector forms them).
func bucketLow(s string) (int64, error) {
	lo, rest, ok := strings.Cut(s, "-")
	if s == "0B" {
		return 0, nil
	}
	if !ok {
		return 0, fmt.Errorf("%q is not a size range", s)
	}
	n, err := strconv.ParseInt(lo, 10, 64)
	if err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("%q is not a size range", s)
	}
	i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		return 0, fmt.Errorf("%q has no unit", s)
	}
	unit := map[string]int64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[rest[i:]]
	if unit == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q", s, rest[i:])
	}
	return n * unit, nil
}

// parsePromLine reads `name{k="v",...} value [timestamp]`.
func parsePromLine(l string) (name string, labels map[string]string, value float64, err error) {
	labels = map[string]string{}
	i := strings.IndexAny(l, "{ ")
	if i <= 0 {
		return "", nil, 0, errors.New("no metric name")
	}
	name, rest := l[:i], l[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return "", nil, 0, errors.New("bad label")
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var v strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				v.WriteByte(rest[j])
			}
			if j >= len(rest) {
				return "", nil, 0, errors.New("unterminated label value")
			}
			labels[key] = v.String()
			rest = rest[j+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, errors.New("no value")
	}
	value, err = strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("value %q: %w", fields[0], err)
	}
	return name, labels, value, nil
}

// seriesKey is a series' labels in a canonical order.
func seriesKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + labels[k] + "\x00")
	}
	return b.String()
}
