package server

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// releaseStartupPages unmaps the pages of this binary's read-only mappings
// (its code, read-only data and function tables) from the process. Starting
// touches tens of megabytes of them once (package initialisers, the API's
// schema generation, the migrations' SQLite code) that an idle or busy node
// never runs again; they stay in its resident set until memory runs short.
// MADV_DONTNEED on a private, never-written file mapping only drops the
// page-table entries: the pages stay in the page cache, and what runs again
// is mapped back on its first touch by a minor fault (no disk read). The
// writable mapping (Go's data and bss) is never touched: dropping it would
// lose its contents.
func releaseStartupPages() (released int64, err error) {
	var exe syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &exe); err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Contains(fields[1], "w") || fields[4] != fmt.Sprint(exe.Ino) {
			continue
		}
		var start, end uintptr
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &start, &end); err != nil {
			return released, err
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += int64(end - start)
	}
	return released, sc.Err()
}
