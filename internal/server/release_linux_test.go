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
