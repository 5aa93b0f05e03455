//go:build cgo

package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Supported reports whether this build can load NVML at all (go-nvml needs cgo).
const Supported = true

// Library reads devices through the real NVML, loaded from path at Init.
type Library struct {
	path    string
	lib     gonvml.Interface
	devices []gonvml.Device
	nvlinks []bool
}

// NewLibrary returns a Reader over the NVML library at path ("" for XFER_NVML_LIB or the default).
func NewLibrary(path string) *Library {
	return &Library{path: libraryPath(path)}
}

// Init loads the library and finds the devices.
func (l *Library) Init() (err error) {
	defer func() {
		// go-nvml panics on some unusable libraries; never let that reach the user.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s could not be loaded: %v", l.path, r)
		}
	}()
	l.lib = gonvml.New(gonvml.WithLibraryPath(l.path))
	if ret := l.lib.Init(); ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
			return fmt.Errorf("NVML library not found (looked for %s)", l.path)
		}
		return fmt.Errorf("%s: %s", l.path, l.lib.ErrorString(ret))
	}
	n, ret := l.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return errors.New(l.lib.ErrorString(ret))
	}
	for i := range n {
		d, ret := l.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("device %d: %s", i, l.lib.ErrorString(ret))
		}
		l.devices = append(l.devices, d)
		active := false
		for link := range gonvml.NVLINK_MAX_LINKS {
			if st, ret := d.GetNvLinkState(link); ret == gonvml.SUCCESS && st == gonvml.FEATURE_ENABLED {
				active = true
				break
			}
		}
		l.nvlinks = append(l.nvlinks, active)
	}
	return nil
}

// Count returns the number of devices.
func (l *Library) Count() (int, error) { return len(l.devices), nil }

// Sample reads one device. Readings a device does not support are -1.
func (l *Library) Sample(i int) (Sample, error) {
	d := l.devices[i]
	s := Sample{UtilPct: -1, MemUsed: -1, PCIeRx: -1, PCIeTx: -1, NVLinkRx: -1, NVLinkTx: -1, PowerMilliW: -1, SMClockMHz: -1, TempC: -1}
	if u, ret := d.GetUtilizationRates(); ret == gonvml.SUCCESS {
		s.UtilPct = int64(u.Gpu)
	}
	if m, ret := d.GetMemoryInfo(); ret == gonvml.SUCCESS {
		s.MemUsed = int64(m.Used)
	}
	// PCIe throughput is reported in KB/s over a 20 ms window (FACTS.md).
	if v, ret := d.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES); ret == gonvml.SUCCESS {
		s.PCIeRx = int64(v) * 1024
	}
	if v, ret := d.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES); ret == gonvml.SUCCESS {
		s.PCIeTx = int64(v) * 1024
	}
	if l.nvlinks[i] {
		vals := []gonvml.FieldValue{{FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX}, {FieldId: gonvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX}}
		if ret := d.GetFieldValues(vals); ret == gonvml.SUCCESS {
			// KiB/s, as NVML reports NVLink data throughput.
			if vals[0].NvmlReturn == uint32(gonvml.SUCCESS) {
				s.NVLinkRx = int64(fieldUint(vals[0])) * 1024
			}
			if vals[1].NvmlReturn == uint32(gonvml.SUCCESS) {
				s.NVLinkTx = int64(fieldUint(vals[1])) * 1024
			}
		}
	}
	if p, ret := d.GetPowerUsage(); ret == gonvml.SUCCESS {
		s.PowerMilliW = int64(p)
	}
	if c, ret := d.GetClockInfo(gonvml.CLOCK_SM); ret == gonvml.SUCCESS {
		s.SMClockMHz = int64(c)
	}
	if t, ret := d.GetTemperature(gonvml.TEMPERATURE_GPU); ret == gonvml.SUCCESS {
		s.TempC = int64(t)
	}
	return s, nil
}

func fieldUint(v gonvml.FieldValue) uint64 {
	var u uint64
	for i := 7; i >= 0; i-- {
		u = u<<8 | uint64(v.Value[i])
	}
	return u
}

// Shutdown releases the library.
func (l *Library) Shutdown() {
	if l.lib != nil {
		l.lib.Shutdown()
	}
}
