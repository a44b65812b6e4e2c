// Package cputime reads the CPU time this process has used, for the
// benchmarks that report CPU per operation beside wall time: on a machine
// whose speed wanders, CPU a run is the steadier figure.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, user and system. A
// database server in another process (PostgreSQL) is not in it.
func Process() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
