package fault

import (
	"errors"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec, want, err string
	}{
		{spec: "kind=nic_slow,host=37,nic=3,factor=0.3,at=2s,for=5s", want: "kind=nic_slow,host=37,nic=3,factor=0.3,at=2s,for=5s"},
		{spec: "kind=nic_flap,host=1,nic=0", want: "kind=nic_flap,host=1,nic=0,factor=0,period=1s,at=0s"},
		{spec: "kind=nic_flap,host=1,nic=0,period=20ms", want: "kind=nic_flap,host=1,nic=0,factor=0,period=20ms,at=0s"},
		{spec: "kind=nic_flap,host=1,nic=0,period=0", err: `period "0" must be at least 100µs`},
		{spec: "kind=nic_flap,host=1,nic=0,period=1ns", err: `period "1ns" must be at least 100µs`},
		{spec: "kind=gpu_slow,rank=12,factor=0.5", want: "kind=gpu_slow,rank=12,factor=0.5,at=0s"},
		{spec: "kind=host_slow,host=3,delay=50us,at=1s", want: "kind=host_slow,host=3,delay=50µs,at=1s"},
		{spec: "kind=pcie_gen,host=0,gpu=2", want: "kind=pcie_gen,host=0,gpu=2,at=0s"},
		{spec: "kind=hang,host=0,gpu=1,coll=AllReduce", want: "kind=hang,host=0,gpu=1,coll=all_reduce,at=0s"},
		{spec: "kind=hang,rank=17,coll=all_reduce,mode=in", want: "kind=hang,rank=17,coll=all_reduce,mode=in,at=0s"},
		{spec: "kind=hang,rank=17,mode=before", want: "kind=hang,rank=17,at=0s"},
		{spec: "kind=hang,rank=17,mode=after", err: "mode \"after\" is not a hang mode"},
		{spec: "kind=gpu_slow,rank=1,factor=0.5,mode=in", err: "takes no key \"mode\""},
		{spec: "kind=missing_rank,host=0,gpu=1", want: "kind=missing_rank,host=0,gpu=1,at=0s"},
		{spec: "host=1", err: "kind is missing"},
		{spec: "kind=nic_slow,host=1,nic=0", err: "needs host, nic, factor"},
		{spec: "kind=nic_slow,host=1,nic=0,factor=1.5", err: "factor \"1.5\" must be a number in (0, 1)"},
		{spec: "kind=nic_slow,host=1,nic=0,factor=0.5,gpu=2", err: "takes no key \"gpu\""},
		{spec: "kind=slow", err: "kind \"slow\" is not a fault kind"},
		{spec: "kind=gpu_slow,host=-1,gpu=0,factor=0.5", err: "host \"-1\" is not a non-negative integer"},
		{spec: "kind=gpu_slow,host=0,gpu=0,factor=0.5,at=soon", err: "at \"soon\" is not a duration"},
		{spec: "kind=nic_slow,host=0,nic=0,factor=0.3,at=-1s", err: "at \"-1s\": must not be negative"},
		{spec: "kind=gpu_slow,host=0,gpu=0,factor=0.5,for=x,at=y", err: "at \"y\" is not a duration"},
		{spec: "kind=hang,host=0,gpu=0,coll=allfoo", err: "coll \"allfoo\" is not an NCCL op"},
		{spec: "kind=hang,rank=4,coll=send,at=1s", want: "kind=hang,rank=4,coll=send,at=1s"},
		{spec: "kind=hang,rank=4,coll=Recv,mode=in", want: "kind=hang,rank=4,coll=recv,mode=in,at=0s"},
		{spec: "kind=hang,rank=4,coll=sendrecv", want: "kind=hang,rank=4,coll=send_recv,at=0s"},
		{spec: "kind=hang,rank=4,coll=any", want: "kind=hang,rank=4,coll=any,at=0s"},
		{spec: "kind=host_slow,host=0", err: "needs host, delay"},
		{spec: "kind=gpu_slow,host=0,host=1", err: "host given twice"},
		{spec: "kind=gpu_slow,rank=1,host=1,factor=0.5", err: "not both"},
		{spec: "kind=fabric_slow,group=1,rail=3,factor=0.5,at=1s", want: "kind=fabric_slow,group=1,rail=3,factor=0.5,at=1s"},
		{spec: "kind=fabric_slow,link=3,factor=0.5", err: "takes no key \"link\""},
		{spec: "kind=fabric_slow,group=1,factor=0.5", err: "needs group, rail, factor"},
		{spec: "kind", err: "not key=value"},
		{spec: "kind=hang,host=1,gpu=0,at=0.5s,for=2s", err: `hang takes no key "for": a hang lasts to the end of the run`},
		{spec: "kind=hang,rank=8,mode=in,for=0", err: `hang takes no key "for"`},
		{spec: "kind=missing_rank,host=1,gpu=0,for=1s", err: `missing_rank takes no key "for": a missing rank never joins`},
		{spec: "kind=host_slow,host=1,delay=1ms,at=1s,for=2s", want: "kind=host_slow,host=1,delay=1ms,at=1s,for=2s"},
	} {
		f, err := Parse(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v; want one saying %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if got := f.String(); got != c.want {
			t.Errorf("%s: reads as %s; want %s", c.spec, got, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("kind=nic_slow,host=37,nic=3,factor=0.3,at=2s,for=5s")
	f.Add("kind=hang,rank=3,coll=all_gather")
	f.Add("kind=hang,rank=3,mode=in")
	f.Add("kind=hang,host=1,gpu=0,at=0.5s,for=2s")
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := Parse(s)
		if err != nil {
			return
		}
		if flt.Factor < 0 || flt.Factor > 1 || flt.At < 0 || flt.For < 0 {
			t.Errorf("%q parsed to out-of-range %+v", s, flt)
		}
		if flt.For != 0 && (flt.Kind == Hang || flt.Kind == MissingRank) {
			t.Errorf("%q parsed to a %s that ends (for %d ns): a %s lasts to the run's end", s, flt.Kind, flt.For, flt.Kind)
		}
	})
}

// The cuda backend takes the faults it can make honestly (a slow host's launches, a rank that
// never launches a collective) and names the others and why.
func TestOnRealGPUs(t *testing.T) {
	for _, c := range []struct{ spec, err string }{
		{spec: "kind=host_slow,host=0,delay=1ms"},
		{spec: "kind=hang,rank=1,coll=all_reduce"},
		{spec: "kind=hang,rank=1,mode=in", err: "hang: the cuda backend cannot inject it: a real NCCL kernel cannot be made to stall"},
		{spec: "kind=nic_slow,host=0,nic=0,factor=0.5", err: "nic_slow: the cuda backend cannot inject it: a real link's rate"},
		{spec: "kind=nic_flap,host=0,nic=0", err: "a real link's rate"},
		{spec: "kind=nvlink_slow,rank=1,factor=0.5", err: "a real link's rate"},
		{spec: "kind=pcie_gen,rank=1", err: "a real link's rate"},
		{spec: "kind=gpu_slow,rank=1,factor=0.5", err: "gpu_slow: the cuda backend cannot inject it: a real GPU cannot be throttled"},
		{spec: "kind=missing_rank,rank=1", err: "missing_rank: the cuda backend cannot inject it: the ranks of one process"},
	} {
		f, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = f.OnRealGPUs()
		if c.err == "" {
			if err != nil {
				t.Errorf("%s: %v; want it taken", c.spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrNotOnRealGPUs) {
			t.Errorf("%s: %v; want ErrNotOnRealGPUs saying %q", c.spec, err, c.err)
		}
	}
}

// A fabric_slow names a leaf of a rail fabric: a topology without one, or a leaf out of range, is
// refused with what is wrong.
func TestBindLeaf(t *testing.T) {
	rail := engine.Topology{Name: "rail64", Hosts: 64, GPUsPerHost: 8, Fabric: engine.Fabric{Kind: engine.FabricRail, SwitchRadix: 40, Oversubscription: 4}}
	flat := rail
	flat.Name, flat.Fabric = "flat", engine.Fabric{}
	for _, c := range []struct {
		spec string
		topo engine.Topology
		err  string
	}{
		{"kind=fabric_slow,group=1,rail=7,factor=0.5", rail, ""},
		{"kind=fabric_slow,group=2,rail=0,factor=0.5", rail, "group 2 is out of range (topology rail64 has 2 rail groups)"},
		{"kind=fabric_slow,group=0,rail=8,factor=0.5", rail, "rail 8 is out of range (topology rail64 has 8 rails)"},
		{"kind=fabric_slow,group=0,rail=0,factor=0.5", flat, "topology flat has no switch fabric"},
	} {
		f, err := Parse(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		err = f.Bind(c.topo)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s on %s: %v; want %q", c.spec, c.topo.Name, err, c.err)
		}
		if f.Devices(c.topo) != nil {
			t.Errorf("%s: acts on GPUs %v; want none", c.spec, f.Devices(c.topo))
		}
	}
}
