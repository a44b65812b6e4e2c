package config

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Memory is the memory this process may use, in bytes: its cgroup's
// limit when one is set (v2 memory.max, v1 memory.limit_in_bytes), else
// the machine's (MemTotal); 0 when neither can be read (not Linux). The
// defaults sized from memory (AP_MAX_INFLIGHT, the JavaScript VMs alive at
// once) follow it, so a container gets what its limit allows.
var Memory = sync.OnceValue(func() int64 {
	if n := cgroupMemory(); n > 0 {
		return n
	}
	return memTotal()
})

// cgroupMemory is this process's cgroup memory limit in bytes, 0 when none
// is set (or it is above the machine's memory).
var cgroupMemory = sync.OnceValue(func() int64 {
	machine := memTotal()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) is no limit.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (machine == 0 || n < machine) {
			return n
		}
	}
	return 0
})

// SoftMemoryLimit is the Go runtime's soft memory limit that serve and
// worker set (runtime/debug.SetMemoryLimit), 0 for none: 90 % of the
// cgroup's memory limit unless GOMEMLIMIT is set. Go lets the heap grow to
// twice what it holds live, plus the goroutines' stacks, before it
// collects; runs in flight hold their memory for seconds, so a container
// sized for its live memory would be killed at its limit while the
// collector would have found half of it garbage. Without a cgroup limit
// the machine is shared with others and Go's default pacing stands.
func SoftMemoryLimit() int64 { return softMemoryLimit(os.Getenv("GOMEMLIMIT"), cgroupMemory()) }

func softMemoryLimit(gomemlimit string, cgroup int64) int64 {
	if gomemlimit != "" || cgroup <= 0 {
		return 0
	}
	return cgroup / 10 * 9
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unread.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// JSLive is how many JavaScript runs may have a VM at once, executing or
// waiting on a host call: as many as half the memory holds at
// AP_JS_MEMORY_MB each, and at least the CPU slots. A run waiting on an
// LLM gives its CPU slot back but keeps its VM, so this, not the CPU
// slots, bounds the VMs' memory.
func (c *Config) JSLive() int {
	n := c.Workers
	if m := Memory(); m > 0 && c.JSMemoryMB > 0 {
		n = max(n, int(m/2/(int64(c.JSMemoryMB)<<20)))
	}
	return n
}
