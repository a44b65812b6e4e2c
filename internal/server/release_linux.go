package server

import (
	"bufio"
	"fmt"
	"io"
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
// is mapped back on its first touch by a minor fault (no disk read).
func releaseStartupPages() (released int64, err error) {
	var exe syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &exe); err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	spans, err := untouchedMappings(f, exe.Ino)
	if err != nil {
		return 0, err
	}
	for _, sp := range spans {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, sp.start, sp.end-sp.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += int64(sp.end - sp.start)
	}
	return released, nil
}

type span struct{ start, end uintptr }

// untouchedMappings reads smaps for the mappings of file inode ino that
// hold nothing but the file's own pages: read-only, and no anonymous
// (copy-on-write) page. That leaves out Go's data and bss, and a position-
// independent build's relocated read-only data (GNU_RELRO: written by the
// dynamic loader, then made read-only): dropping those pages would bring
// back the file's unrelocated bytes.
func untouchedMappings(smaps io.Reader, ino uint64) ([]span, error) {
	var out []span
	var cur *span // the mapping being read, if it is a candidate
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // start-end perms offset dev inode [path]
			cur = nil
			if len(fields) < 6 || strings.Contains(fields[1], "w") || fields[4] != fmt.Sprint(ino) {
				continue
			}
			var sp span
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &sp.start, &sp.end); err != nil {
				return nil, err
			}
			out = append(out, sp)
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil && fields[0] == "Anonymous:" && len(fields) > 1 && fields[1] != "0" {
			out = out[:len(out)-1]
			cur = nil
		}
	}
	return out, sc.Err()
}
