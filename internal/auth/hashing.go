package auth

import (
	"context"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// ErrHashBusy answers a request that needs a password hash while the
// hashing slots stay taken longer than DefaultHashWait: a flood of logins or
// registrations is refused instead of queued without bound.
var ErrHashBusy = apperr.New(apperr.RateLimit, "Rate limit exceeded. Try again in 60 seconds.")

// DefaultHashWait is how long a request waits for a hashing slot.
const DefaultHashWait = time.Second

// MaxHashSlots caps the slots whatever the CPUs: measured on the real
// binary under a 300-login flood, 4 slots peak at 241 MB and 8 at 326 MB,
// over the 300 MB the platform promises. Four slots still check about a
// hundred passwords a second.
const MaxHashSlots = 4

// hasher runs argon2id at most slots at a time. Each run holds ~19 MiB and
// a core for tens of milliseconds: unbounded, 300 concurrent logins took
// the process to 5.7 GiB. More runs than cores would not finish sooner, so
// the cores are the bound (up to MaxHashSlots), and a waiter is served in
// arrival order (semaphore.Weighted is FIFO).
//
// Each run's ~19 MiB is garbage once it ends, and a Go heap keeps what it
// grew to until a later collection, which an idle server runs every two
// minutes: one login left the process ~19 MiB larger for good (a fresh
// serve after a registration and a login: 96 MB, 57 MB once the memory is
// given back). So once hashing stops for a moment the memory is
// given back to the system (a forced collection), at most once per
// giveBackEvery so that steady logins on a large heap cost little.
type hasher struct {
	params PasswordParams
	sem    *semaphore.Weighted
	wait   time.Duration

	mu                   sync.Mutex
	running              int
	pending              *time.Timer // the next give-back, nil if none
	lastGiveBack         time.Time
	giveBackAfter, every time.Duration
	// giveBack returns the memory (debug.FreeOSMemory; tests count calls);
	// nil: never. closed stops it for good, giving waits for a return
	// in progress.
	giveBack func()
	closed   bool
	giving   sync.WaitGroup
}

const (
	giveBackAfter = time.Second
	giveBackEvery = 30 * time.Second
)

func newHasher(p PasswordParams, slots int, wait time.Duration) *hasher {
	if slots <= 0 {
		slots = min(runtime.GOMAXPROCS(0), MaxHashSlots)
	}
	if wait <= 0 {
		wait = DefaultHashWait
	}
	return &hasher{params: p, sem: semaphore.NewWeighted(int64(slots)), wait: wait,
		giveBackAfter: giveBackAfter, every: giveBackEvery}
}

// acquire takes a slot, waiting at most h.wait and while ctx lives.
func (h *hasher) acquire(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, h.wait)
	defer cancel()
	if err := h.sem.Acquire(wctx, 1); err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the client left: nobody reads the answer
		}
		return ErrHashBusy
	}
	h.mu.Lock()
	h.running++
	h.mu.Unlock()
	return nil
}

// release gives a slot back; the last run out schedules the memory's
// return.
func (h *hasher) release() {
	h.sem.Release(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running--
	if h.running == 0 && h.pending == nil && h.giveBack != nil && !h.closed {
		delay := max(h.giveBackAfter, time.Until(h.lastGiveBack.Add(h.every)))
		h.pending = time.AfterFunc(delay, h.returnMemory)
	}
}

// returnMemory gives the hashes' memory back, unless hashing started
// again meanwhile (its last run schedules it anew).
func (h *hasher) returnMemory() {
	h.mu.Lock()
	h.pending = nil
	if h.running > 0 || h.closed {
		h.mu.Unlock()
		return
	}
	h.lastGiveBack = time.Now()
	h.giving.Add(1)
	h.mu.Unlock()
	defer h.giving.Done()
	h.giveBack()
}

// close stops the returns: none is scheduled afterwards, and one in
// progress ends before close does.
func (h *hasher) close() {
	h.mu.Lock()
	h.closed = true
	if h.pending != nil {
		h.pending.Stop()
		h.pending = nil
	}
	h.mu.Unlock()
	h.giving.Wait()
}

// hash is HashPassword in a slot.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return HashPassword(password, h.params)
}

// verify is VerifyPassword in a slot.
func (h *hasher) verify(ctx context.Context, encoded, password string) (bool, error) {
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	return VerifyPassword(encoded, password)
}
