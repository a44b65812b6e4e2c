package server

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFileKB is the process's resident file-backed memory (RssFile).
func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The binary's read-only pages leave the resident set, and the code keeps
// running: what it touches next is mapped back.
func TestReleaseStartupPages(t *testing.T) {
	before := rssFileKB(t)
	n, err := releaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if n <= 0 || after >= before {
		t.Fatalf("released %d bytes of mappings: RssFile %d kB before, %d kB after", n, before, after)
	}
	if got := strconv.Itoa(42) + strings.Repeat("!", 2); got != "42!!" {
		t.Fatalf("after the release: %q", got)
	}
}

// Only read-only mappings of the binary with no anonymous page are
// released: a position-independent build's relocated data (read-only once
// relocated, but copy-on-write pages) keeps its pages.
func TestUntouchedMappings(t *testing.T) {
	smaps := `00400000-022c0000 r-xp 00000000 08:01 42 /ap
Size:              31488 kB
Anonymous:             0 kB
022c0000-0529a000 r--p 01ec0000 08:01 42 /ap
Anonymous:             0 kB
050e3000-05a1e000 r--p 04ce3000 08:01 42 /ap
Anonymous:          9452 kB
05a1e000-05b01000 rw-p 0561e000 08:01 42 /ap
Anonymous:           908 kB
7f0000000000-7f0000001000 r--p 00000000 08:01 7 /lib/libc.so.6
Anonymous:             0 kB
`
	got, err := untouchedMappings(strings.NewReader(smaps), 42)
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{0x400000, 0x22c0000}, {0x22c0000, 0x529a000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("released %x, want %x", got, want)
	}
}
