// Package gcpace has Go's garbage collector run more often while a
// process holds thousands of runs in flight, and as usual otherwise.
//
// A run waiting on an LLM holds its goroutines, its connections' buffers
// and what it has read so far; with GOGC's default of 100 the heap may
// grow to twice what is live before the collector runs, and at 10,000
// runs at once on one node that headroom is hundreds of megabytes
// (inflight.sh, 2 s LLM: peak RSS 1.04–1.12 GB at GOGC=100, 0.90–0.94 GB
// at 60). Those runs mostly wait, so the collector's extra work costs
// little there, while under a steady load of short runs, where CPU is
// what bounds throughput, the default stays. A soft memory limit was not
// the tool: a live heap above it (JavaScript VMs may legitimately hold
// half the memory) makes the collector take up to half the CPU.
//
// An operator's GOGC is left alone.
package gcpace

import (
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

const (
	// high is the runs in flight from which the collector runs at
	// busyPercent; low the count below which it is back at the default.
	// Apart, so that a count hovering around one of them does not switch
	// at every run.
	high = 2000
	low  = 1000
	// busyPercent is GOGC while busy: the heap grows by half of what is
	// live before a collection, instead of all of it.
	busyPercent = 50
	// defaultPercent is Go's GOGC when the environment does not set it.
	defaultPercent = 100
)

var (
	inflight atomic.Int64
	busy     atomic.Bool
	mu       sync.Mutex // orders the switches
)

// Add counts runs starting (delta > 0) or ending (delta < 0) in this
// process, and switches the collector's pace when the count crosses high
// or low. It is cheap when it does not switch: an atomic add and a load.
func Add(delta int) {
	n := inflight.Add(int64(delta))
	if (n >= high) != busy.Load() && (n >= high || n < low) {
		settle()
	}
}

// settle switches the pace to what the count calls for now: another
// Add may have moved it since.
func settle() {
	mu.Lock()
	defer mu.Unlock()
	n := inflight.Load()
	want := busy.Load()
	switch {
	case n >= high:
		want = true
	case n < low:
		want = false
	}
	if want == busy.Load() {
		return
	}
	busy.Store(want)
	if os.Getenv("GOGC") != "" {
		return // the operator's choice stands
	}
	if want {
		debug.SetGCPercent(busyPercent)
	} else {
		debug.SetGCPercent(defaultPercent)
	}
}
