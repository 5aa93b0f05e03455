package session

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// AutoWindow is a Window value (Config.Window, StartReplay's window) asking for the console's
// window to be sized to the job: AutoWindowFor of its GPUs.
const AutoWindow = -1

// AutoWindowFor is the console's window for a job of devices GPUs on this machine
// (timeline.AutoWindow, a quarter of the machine's memory at most).
func AutoWindowFor(devices int) int { return timeline.AutoWindow(devices, systemMemory()) }

// systemMemory is the machine's memory in bytes (MemTotal of /proc/meminfo), 0 where unknown.
func systemMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return memTotal(f)
}

// memTotal reads MemTotal (kB) from a /proc/meminfo; 0 when it is missing or malformed.
func memTotal(f *os.File) uint64 {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
