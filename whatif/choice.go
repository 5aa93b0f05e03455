package whatif

import "github.com/xfertop/xfertop/timeline"

// ncclAsk is the algorithm and protocol the NCCL model is asked for on collective e (0: the
// tuner's choice). What --comm forces wins. Else the run's own forcing (its nccl_algo and
// nccl_proto knobs, Options.RunAlgo and RunProto) holds, as NCCL_ALGO and NCCL_PROTO would still be
// set were the job run again, on any topology. Else, on the topology the trace ran on, each
// collective keeps the algorithm and protocol it was recorded with: the same machine would make the
// same choice, and a replay that chose again would measure the model's tuner, not the change. On
// another topology NCCL's tuner chooses again.
func (o *Options) ncclAsk(e *timeline.Event) (timeline.NCCLAlgo, timeline.NCCLProto) {
	algo, proto := o.Algo, o.Proto
	if algo == 0 {
		algo = o.RunAlgo
	}
	if proto == 0 {
		proto = o.RunProto
	}
	if o.Algo != 0 || o.Proto != 0 || !o.onRecorded() {
		return algo, proto
	}
	if a, p, _ := e.NCCLChoice(); a != 0 && (o.RunAlgo == 0 || a == o.RunAlgo) && (o.RunProto == 0 || p == o.RunProto) {
		return a, p
	}
	return algo, proto
}

// onRecorded says the replay's topology is the one the trace ran on.
func (o *Options) onRecorded() bool {
	return o.Recorded.Hosts > 0 && o.Topology.Hosts == o.Recorded.Hosts && o.Topology.Name == o.Recorded.Name &&
		o.Topology.GPUsPerHost == o.Recorded.GPUsPerHost
}
