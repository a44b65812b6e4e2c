package fairshare

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// acquireAsync starts an Acquire and answers the channel its result comes on.
func acquireAsync(ctx context.Context, p *Pool, owner string) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.Acquire(ctx, owner) }()
	return ch
}

// waiting polls until n waiters are queued.
func waiting(t *testing.T, p *Pool, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.waiters) == n
	}, 5*time.Second, time.Millisecond)
}

func granted(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("not granted")
	}
}

func notGranted(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("granted too early (err %v)", err)
	default:
	}
}

func TestOverdraft(t *testing.T) {
	t.Parallel()
	for size, want := range map[int]int{1: 1, 2: 1, 4: 1, 8: 2, 10: 2, 16: 4, 100: 25} {
		require.Equal(t, want, Overdraft(size), "size %d", size)
		require.Equal(t, size+want, Shared(size).Capacity())
	}
	require.Equal(t, 4, New(4, 0).PerOwner(), "alone, all of it")
	require.Equal(t, 4, New(4, 9).PerOwner(), "never more than the pool")
	require.Equal(t, 4, New(4, 2).Capacity(), "New never lends")
}

// TestAloneTakesItsShare: an owner alone takes slots without waiting up to
// its cap (New) or all of them (Shared).
func TestAloneTakesItsShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New(4, 2)
	for range 2 {
		require.NoError(t, p.Acquire(ctx, "b"))
	}
	require.False(t, p.TryAcquire("b"))
	require.True(t, p.Full("b"))
	require.True(t, p.TryAcquire("a"))
	for _, o := range []string{"a", "b", "b"} {
		p.Release(o)
	}

	p = Shared(4)
	for range 4 {
		require.NoError(t, p.Acquire(ctx, "b"))
	}
	require.True(t, p.Full("b"), "alone at every slot: its own share")
	require.False(t, p.TryAcquire("b"))
	for range 4 {
		p.Release("b")
	}
	require.Zero(t, p.total)
	require.Empty(t, p.held)
}

// TestSharedLendsToANewcomer: b alone fills a Shared pool with runs that
// do not end; a newcomer starts at once on a lent slot, b's next run
// waits, the pool never holds more than its capacity, and the slots b
// frees go to the newcomer until it holds its share; b's waiting run
// starts once b is back under its share and a slot is free.
func TestSharedLendsToANewcomer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := Shared(8) // lends 2
	held := func() (a, b, total, waiters int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.held["a"], p.held["b"], p.total, len(p.waiters)
	}
	for range 8 {
		require.True(t, p.TryAcquire("b"))
	}
	require.NoError(t, p.Acquire(ctx, "a"), "a newcomer starts at once")
	require.NoError(t, p.Acquire(ctx, "a"))
	a3 := acquireAsync(ctx, p, "a")
	waiting(t, p, 1)
	b9 := acquireAsync(ctx, p, "b")
	waiting(t, p, 2)
	require.True(t, p.Full("b"))
	require.False(t, p.Full("a"), "a is below its share: its run waits for the next slot")
	require.False(t, p.TryAcquire("c"), "nothing left to lend")
	a, b, total, w := held()
	require.Equal(t, []int{2, 8, 10, 2}, []int{a, b, total, w})

	p.Release("b") // a is below its share (4): the slot is lent to a3
	granted(t, a3)
	p.Release("b")
	p.Release("b") // 8 held, b over its share: b9 waits
	a, b, total, w = held()
	require.Equal(t, []int{3, 5, 8, 1}, []int{a, b, total, w})
	p.Release("b") // b back to its share, a slot free under size
	granted(t, b9)
	a, b, total, w = held()
	require.Equal(t, []int{3, 5, 8, 0}, []int{a, b, total, w})
	for _, o := range []string{"a", "a", "a", "b", "b", "b", "b", "b"} {
		p.Release(o)
	}
	require.Zero(t, p.total)
	require.Empty(t, p.held)
	require.Empty(t, p.waiting)
}

// TestFreedSlotGoesToTheOwnerHoldingFewest: b waits with many requests,
// a with one, queued after b's; the next slot is a's, then b's and a's
// alternate by holdings, the longest waiting first among equals.
func TestFreedSlotGoesToTheOwnerHoldingFewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New(2, 2)
	require.NoError(t, p.Acquire(ctx, "b"))
	require.NoError(t, p.Acquire(ctx, "b"))
	b1 := acquireAsync(ctx, p, "b")
	waiting(t, p, 1)
	b2 := acquireAsync(ctx, p, "b")
	waiting(t, p, 2)
	a1 := acquireAsync(ctx, p, "a")
	waiting(t, p, 3)
	c1 := acquireAsync(ctx, p, "c")
	waiting(t, p, 4)

	p.Release("b") // b holds 1; a and c hold 0: a waited longer
	granted(t, a1)
	notGranted(t, b1)
	notGranted(t, c1)
	p.Release("b") // b 0, a 1, c 0: b waited longer than c
	granted(t, b1)
	notGranted(t, c1)
	p.Release("a") // a 0, b 1, c 0
	granted(t, c1)
	notGranted(t, b2)
	p.Release("c")
	granted(t, b2)
	p.Release("b")
	p.Release("b")
	require.Zero(t, p.total)
	require.Empty(t, p.waiters)
}

// TestOwnerAtItsShareWaitsWhileOthersTakeTheRest: an owner at its share
// waits even with slots free; another takes them at once.
func TestOwnerAtItsShareWaitsWhileOthersTakeTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New(4, 2)
	require.NoError(t, p.Acquire(ctx, "b"))
	require.NoError(t, p.Acquire(ctx, "b"))
	b3 := acquireAsync(ctx, p, "b")
	waiting(t, p, 1)
	require.NoError(t, p.Acquire(ctx, "a"))
	require.NoError(t, p.Acquire(ctx, "a"))
	notGranted(t, b3)
	p.Release("b")
	granted(t, b3)
	for _, o := range []string{"a", "a", "b", "b"} {
		p.Release(o)
	}
}

// TestCancelledWaitHoldsNothing: a wait ends with its context, holds no
// slot, and the next release goes to the waiter behind it.
func TestCancelledWaitHoldsNothing(t *testing.T) {
	t.Parallel()
	p := New(1, 1)
	require.NoError(t, p.Acquire(context.Background(), "b"))
	ctx, cancel := context.WithCancel(context.Background())
	gone := acquireAsync(ctx, p, "a")
	waiting(t, p, 1)
	next := acquireAsync(context.Background(), p, "c")
	waiting(t, p, 2)
	cancel()
	select {
	case err := <-gone:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end with its context")
	}
	p.Release("b")
	granted(t, next)
	p.Release("c")
	require.Zero(t, p.total)
	require.Empty(t, p.held)

	// An ended context does not even queue.
	require.NoError(t, p.Acquire(context.Background(), "b"))
	require.ErrorIs(t, p.Acquire(ctx, "a"), context.Canceled)
	require.Empty(t, p.waiters)
	p.Release("b")
}

// TestNoLeakUnderLoad: many owners acquire, hold briefly and release, some
// with contexts that end; at no moment are more slots held than the pool
// may hold (its size for New, its capacity for Shared) or more than
// perOwner of one owner, and at the end none is.
func TestNoLeakUnderLoad(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]*Pool{"New": New(3, 2), "Shared": Shared(4)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var inUse atomic.Int32
			var perOwner [4]atomic.Int32
			var over atomic.Bool
			var wg sync.WaitGroup
			for g := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := g % 4
					owner := fmt.Sprint(o)
					for i := range 30 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%3)*time.Millisecond)
						if i%3 == 0 {
							ctx, cancel = context.WithCancel(context.Background())
						}
						if p.Acquire(ctx, owner) == nil {
							if inUse.Add(1) > int32(p.Capacity()) || perOwner[o].Add(1) > int32(p.PerOwner()) {
								over.Store(true)
							}
							time.Sleep(50 * time.Microsecond) //nolint:forbidigo // holding the slot a moment
							perOwner[o].Add(-1)
							inUse.Add(-1)
							p.Release(owner)
						}
						cancel()
					}
				}()
			}
			wg.Wait()
			require.False(t, over.Load(), "more slots held than the pool or a share allows")
			require.Zero(t, p.total)
			require.Empty(t, p.held)
			require.Empty(t, p.waiters)
			require.Empty(t, p.waiting)
		})
	}
}

// BenchmarkUncontended is the activation fast path's cost: one owner,
// slots free.
func BenchmarkUncontended(b *testing.B) {
	p := Shared(100)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Acquire(ctx, "user"); err != nil {
			b.Fatal(err)
		}
		p.Release("user")
	}
}

// BenchmarkParallel is many goroutines of a few owners sharing the pool.
func BenchmarkParallel(b *testing.B) {
	p := Shared(8)
	owners := []string{"a", "b", "c", "d"}
	var n atomic.Int32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		owner := owners[int(n.Add(1))%len(owners)]
		ctx := context.Background()
		for pb.Next() {
			if err := p.Acquire(ctx, owner); err != nil {
				b.Fatal(err)
			}
			p.Release(owner)
		}
	})
}

// Room: the free slots for anyone; once one owner fills the pool, what it
// would lend a newcomer, and that owner as crowded.
func TestRoom(t *testing.T) {
	p := Shared(4)
	free, lend, crowded := p.Room(10)
	require.Equal(t, 4, free)
	require.Zero(t, lend)
	require.Empty(t, crowded)
	for range 3 {
		require.True(t, p.TryAcquire("b"))
	}
	free, lend, crowded = p.Room(10)
	require.Equal(t, 1, free)
	require.Zero(t, lend, "nothing is lent while a slot is free")
	require.Equal(t, []string{"b"}, crowded, "b holds more than a newcomer's share")
	require.True(t, p.TryAcquire("b"))
	free, lend, crowded = p.Room(10)
	require.Zero(t, free)
	require.Equal(t, Overdraft(4), lend, "a newcomer is lent a slot past the size")
	require.Equal(t, []string{"b"}, crowded)
	require.True(t, p.TryAcquire("a"), "and takes it")
	free, lend, _ = p.Room(10)
	require.Zero(t, free+lend)
	_, _, crowded = p.Room(0)
	require.Empty(t, crowded, "at most limit")
	for _, o := range []string{"a", "b", "b", "b", "b"} {
		p.Release(o)
	}
}
