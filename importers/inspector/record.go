package inspector

import (
	"encoding/json"
	"fmt"
)

// header is a record's communicator: its id (a hash, the same in every process of the
// communicator), the process's rank in it, its size.
type header struct {
	ID       string `json:"id"`
	CommName string `json:"comm_name"`
	Rank     *int   `json:"rank"`
	NRanks   int    `json:"n_ranks"`
	NNodes   int    `json:"nnodes"`
}

// metadata is a record's writer: format version, dump time, host and process.
type metadata struct {
	Version string `json:"inspector_output_format_version"`
	DumpUs  uint64 `json:"dump_timestamp_us"`
	Host    string `json:"hostname"`
	Pid     int64  `json:"pid"`
}

// dumpStats is v4.2's and later's per-dump marker: how many operation lines follow it (v4.3) and
// how many were lost.
type dumpStats struct {
	CollRecords  *int64 `json:"coll_records"`
	CollDropped  int64  `json:"coll_dropped_since_last_dump"`
	P2PRecords   *int64 `json:"p2p_records"`
	P2PDropped   int64  `json:"p2p_dropped_since_last_dump"`
	ProxyRecords int64  `json:"proxy_records"`
	ProxyDropped int64  `json:"proxy_dropped_since_last_dump"`
}

// kernelEvent is one channel's kernel in a verbose record's event_trace_ts (µs).
type kernelEvent struct {
	Channel int    `json:"channel_id"`
	Start   uint64 `json:"kernel_start_ts"`
	Stop    uint64 `json:"kernel_stop_ts"`
	Record  uint64 `json:"kernel_record_ts"`
}

// trace is a verbose record's event_trace_ts: the host's start and stop of the operation and each
// channel's kernel.
type trace struct {
	CollStart uint64        `json:"coll_start_ts"`
	P2PStart  uint64        `json:"p2p_start_ts"`
	Kernels   []kernelEvent `json:"kernel_events"`
}

// perf is a coll_perf or p2p_perf body; the p2p_ spellings are filled by UnmarshalJSON's caller.
type perf struct {
	Op       string   `json:"coll"`
	Algo     string   `json:"coll_algo"`
	Proto    string   `json:"coll_proto"`
	SN       uint64   `json:"coll_sn"`
	Bytes    *int64   `json:"coll_msg_size_bytes"`
	ExecUs   *float64 `json:"coll_exec_time_us"`
	Timing   string   `json:"coll_timing_source"`
	AlgBW    *float64 `json:"coll_algobw_gbs"`
	BusBW    *float64 `json:"coll_busbw_gbs"`
	Trace    *trace   `json:"event_trace_ts"`
	Peer     *int     `json:"-"`
	p2p      bool
	hasTrace bool
}

// p2pPerf is a p2p_perf body as Inspector spells it.
type p2pPerf struct {
	Op     string   `json:"p2p"`
	SN     uint64   `json:"p2p_sn"`
	Peer   *int     `json:"p2p_peer"`
	Bytes  *int64   `json:"p2p_msg_size_bytes"`
	ExecUs *float64 `json:"p2p_exec_time_us"`
	Timing string   `json:"p2p_timing_source"`
	AlgBW  *float64 `json:"p2p_algobw_gbs"`
	BusBW  *float64 `json:"p2p_busbw_gbs"`
	Trace  *trace   `json:"event_trace_ts"`
}

// line is one line of a log: a dump marker, an operation, a proxy trace, with or without its own
// context.
type line struct {
	Header    *header         `json:"header"`
	Meta      *metadata       `json:"metadata"`
	DumpStats *dumpStats      `json:"dump_stats"`
	Coll      *perf           `json:"coll_perf"`
	P2P       *p2pPerf        `json:"p2p_perf"`
	Proxy     json.RawMessage `json:"proxy_trace"`
}

// op is the operation a line holds, collective or point-to-point, in one shape.
func (l *line) op() *perf {
	if l.Coll != nil {
		l.Coll.hasTrace = l.Coll.Trace != nil
		return l.Coll
	}
	if l.P2P == nil {
		return nil
	}
	p := l.P2P
	return &perf{Op: p.Op, SN: p.SN, Bytes: p.Bytes, ExecUs: p.ExecUs, Timing: p.Timing, AlgBW: p.AlgBW, BusBW: p.BusBW,
		Trace: p.Trace, Peer: p.Peer, p2p: true, hasTrace: p.Trace != nil}
}

// check says what is wrong with an operation's fields, or nil.
func (p *perf) check() error {
	switch {
	case p.Op == "":
		return fmt.Errorf("no operation name (coll or p2p)")
	case p.Bytes != nil && *p.Bytes < 0:
		return fmt.Errorf("negative message size %d", *p.Bytes)
	case p.ExecUs != nil && (*p.ExecUs < 0 || *p.ExecUs > maxExecUs):
		return fmt.Errorf("exec time %v µs out of range", *p.ExecUs)
	case p.Trace != nil && len(p.Trace.Kernels) > maxChannels:
		return fmt.Errorf("%d kernel events (at most %d channels)", len(p.Trace.Kernels), maxChannels)
	}
	return nil
}

// maxExecUs bounds an exec time: a day, far above any collective, so that ns arithmetic cannot
// overflow.
const maxExecUs = 86400e6

// maxChannels bounds the kernel events of one record (NCCL has at most 64 channels; 4× that for
// formats to come).
const maxChannels = 256
