package warm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// deep recurses n frames with a frame of some size, as a call down to a
// database driver does.
//
//go:noinline
func deep(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%256])
}

// run runs f on p and waits until it has returned and its goroutine is
// back among the idle, as the next run of a loop would find it.
func run(t *testing.T, p *Pool, f func()) {
	t.Helper()
	done := make(chan struct{})
	p.Go(func() { f(); close(done) })
	<-done
	for deadline := time.Now().Add(5 * time.Second); ; runtime.Gosched() {
		p.mu.Lock()
		back := len(p.idle) > 0
		p.mu.Unlock()
		if back {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the goroutine did not come back")
		}
	}
}

// Runs one after another go to one goroutine, which outlives them, and
// runs at once to as many.
func TestGoReusesItsGoroutines(t *testing.T) {
	p := New(20*time.Millisecond, 8)
	var ids sync.Map
	for range 100 {
		run(t, p, func() {
			ids.Store(goid(), true)
			deep(200)
		})
	}
	n := 0
	ids.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("100 runs one after another ran on %d goroutines", n)
	}

	var running, most atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 8 {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			<-release
			running.Add(-1)
		})
	}
	for deadline := time.Now().Add(5 * time.Second); running.Load() < 8; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 runs at once running", running.Load())
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if most.Load() != 8 {
		t.Fatalf("at most %d of 8 ran at once", most.Load())
	}
}

// A burst of runs leaves maxIdle goroutines waiting; the others end with
// their runs (goleak checks none is left after Close).
func TestBurstLeavesAtMostMaxIdle(t *testing.T) {
	p := New(time.Hour, 3)
	defer p.Close()
	release := make(chan struct{})
	var started, wg sync.WaitGroup
	for range 10 {
		started.Add(1)
		wg.Add(1)
		p.Go(func() { defer wg.Done(); started.Done(); <-release })
	}
	started.Wait()
	close(release)
	wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; runtime.Gosched() {
		p.mu.Lock()
		n := len(p.idle)
		p.mu.Unlock()
		if n == 3 {
			break
		}
		if n > 3 || time.Now().After(deadline) {
			t.Fatalf("%d goroutines idle after a burst of 10, at most 3 kept", n)
		}
	}
}

// Idle goroutines end after their time (goleak checks none is left).
func TestIdleGoroutinesEnd(t *testing.T) {
	p := New(10*time.Millisecond, 8)
	for range 4 {
		run(t, p, func() {})
	}
	before := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() >= before; {
		if time.Now().After(deadline) {
			t.Fatal("the idle goroutine did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close ends every goroutine, idle or busy, and later runs go to
// goroutines of their own (goleak checks none is left).
func TestCloseEndsThem(t *testing.T) {
	p := New(time.Hour, 8)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); <-release })
	}
	var warm string
	run(t, p, func() { warm = goid() })
	p.Close()
	close(release)
	wg.Wait()
	after := make(chan string)
	p.Go(func() { after <- goid() })
	if id := <-after; id == warm {
		t.Error("a run after Close went to a pool goroutine")
	}
}

// goid is the calling goroutine's id, read from its stack's header.
func goid() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	for i := len("goroutine "); i < len(b); i++ {
		if b[i] == ' ' {
			return string(b[len("goroutine "):i])
		}
	}
	return string(b)
}
