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

// Run returns once f has returned, on a goroutine that outlives it: calls
// one after another run on one goroutine, and calls at once on as many.
func TestRunReusesItsGoroutines(t *testing.T) {
	p := New(20 * time.Millisecond)
	var ids sync.Map
	for range 100 {
		ran := false
		p.Run(func() {
			ids.Store(goid(), true)
			deep(200)
			ran = true
		})
		if !ran {
			t.Fatal("Run returned before its function")
		}
	}
	n := 0
	ids.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("100 calls one after another ran on %d goroutines", n)
	}

	var running, most atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			p.Run(func() {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				<-release
				running.Add(-1)
			})
		})
	}
	for deadline := time.Now().Add(5 * time.Second); running.Load() < 8; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 8 calls at once running", running.Load())
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if most.Load() != 8 {
		t.Fatalf("at most %d of 8 ran at once", most.Load())
	}
}

// A panic of the function is the caller's, and the pool goes on.
func TestRunPanicsAsItsFunction(t *testing.T) {
	p := New(20 * time.Millisecond)
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v", v)
			}
		}()
		p.Run(func() { panic("boom") })
		t.Fatal("Run returned")
	}()
	ran := false
	p.Run(func() { ran = true })
	if !ran {
		t.Fatal("the pool stopped after a panic")
	}
}

// Idle goroutines end after their time (goleak checks none is left).
func TestIdleGoroutinesEnd(t *testing.T) {
	p := New(10 * time.Millisecond)
	for range 4 {
		p.Run(func() {})
	}
	before := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() >= before; {
		if time.Now().After(deadline) {
			t.Fatal("the idle goroutine did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Go runs its function on a warm goroutine without waiting for it.
func TestGo(t *testing.T) {
	p := New(20 * time.Millisecond)
	var first, second string
	done := make(chan struct{})
	p.Go(func() { first = goid(); close(done) })
	<-done
	for deadline := time.Now().Add(5 * time.Second); ; {
		p.mu.Lock()
		idle := len(p.idle)
		p.mu.Unlock()
		if idle == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the goroutine did not come back")
		}
		runtime.Gosched()
	}
	p.Run(func() { second = goid() })
	if first != second {
		t.Fatalf("Go ran on %s, the next Run on %s", first, second)
	}
}

// Close ends every goroutine, idle or busy, and later calls run on their
// caller's goroutine (goleak checks none is left).
func TestCloseEndsThem(t *testing.T) {
	p := New(time.Hour)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { p.Run(func() { <-release }) })
	}
	p.Run(func() {})
	p.Close()
	close(release)
	wg.Wait()
	caller := goid()
	p.Run(func() {
		if goid() != caller {
			t.Error("a call after Close ran on another goroutine")
		}
	})
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
