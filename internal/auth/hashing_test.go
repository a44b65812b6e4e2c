package auth

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

var cheap = PasswordParams{Memory: 64, Time: 1, Threads: 1}

func TestHasherRunsAtMostItsSlots(t *testing.T) {
	t.Parallel()
	h := newHasher(cheap, 2, time.Minute)
	// Count the slots in use from inside: acquire is what every hash and
	// verify goes through.
	var inUse, most atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			require.NoError(t, h.acquire(context.Background()))
			n := inUse.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			inUse.Add(-1)
			h.sem.Release(1)
		})
	}
	wg.Wait()
	require.EqualValues(t, 2, most.Load())
}

func TestHasherWaitsBrieflyThenRefuses(t *testing.T) {
	t.Parallel()
	h := newHasher(cheap, 1, 50*time.Millisecond)
	require.NoError(t, h.acquire(context.Background()))
	start := time.Now()
	_, err := h.verify(context.Background(), "irrelevant", "password1")
	require.ErrorIs(t, err, ErrHashBusy)
	require.True(t, apperr.Is(err, apperr.RateLimit))
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "it waited before refusing")

	// A client that leaves stops waiting at once, and it is not a 429.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.hash(ctx, "password1")
	require.ErrorIs(t, err, context.Canceled)

	// A slot freed while waiting is taken.
	go func() { time.Sleep(10 * time.Millisecond); h.sem.Release(1) }()
	h.wait = time.Minute
	_, err = h.hash(context.Background(), "password1")
	require.NoError(t, err)
}

func TestHasherDefaultsToTheCPUs(t *testing.T) {
	t.Parallel()
	h := newHasher(cheap, 0, 0)
	require.Equal(t, DefaultHashWait, h.wait)
	require.True(t, h.sem.TryAcquire(int64(min(runtime.GOMAXPROCS(0), MaxHashSlots))))
	require.False(t, h.sem.TryAcquire(1))
}

// Every path that computes a password hash waits for a slot: login (an
// unknown email too), register, user create and password change.
func TestEveryPasswordPathTakesASlot(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, err := New(testdb.Open(t, d), testdb.Logger(), Options{SessionTTL: time.Hour, RegistrationOpen: true,
			Password: cheap, HashSlots: 1, HashWait: 20 * time.Millisecond})
		require.NoError(t, err)
		reg := func(email string) Registration {
			return Registration{Email: email, Password: "password1", ConfirmPassword: "password1"}
		}
		u, err := s.Register(ctx, reg("u@example.com"))
		require.NoError(t, err)
		sess, err := s.Login(ctx, "u@example.com", "password1")
		require.NoError(t, err)
		caller := &Caller{UserID: u.ID, Kind: KindSession}

		require.True(t, s.hasher.sem.TryAcquire(1), "the slot was given back")
		paths := []struct {
			name string
			call func() error
		}{
			{"login", func() error { _, err := s.Login(ctx, "u@example.com", "password1"); return err }},
			{"login unknown email", func() error { _, err := s.Login(ctx, "nobody@example.com", "password1"); return err }},
			{"register", func() error { _, err := s.Register(ctx, reg("v@example.com")); return err }},
			{"user create", func() error { _, err := s.CreateUser(ctx, reg("w@example.com"), true); return err }},
			{"password change", func() error { return s.ChangePassword(ctx, caller, "password1", "password2") }},
		}
		for _, p := range paths {
			require.ErrorIs(t, p.call(), ErrHashBusy, p.name)
		}
		s.hasher.sem.Release(1)
		for _, p := range paths {
			err := p.call()
			if p.name == "login unknown email" {
				require.ErrorIs(t, err, ErrBadCredentials)
				continue
			}
			require.NoError(t, err, p.name)
		}
		require.NotEmpty(t, sess.Token)
	})
}

// Hashing's memory is given back once hashing stops, not while it runs,
// and not more often than h.every.
func TestHasherGivesItsMemoryBack(t *testing.T) {
	t.Parallel()
	h := newHasher(cheap, 4, time.Minute)
	var given atomic.Int64
	h.giveBack = func() { given.Add(1) }
	h.giveBackAfter, h.every = 20*time.Millisecond, time.Hour
	t.Cleanup(h.close)

	// A run that holds its slot past giveBackAfter keeps the memory: the
	// others ending do not give it back under it.
	require.NoError(t, h.acquire(context.Background()))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := h.hash(context.Background(), "password1")
			require.NoError(t, err)
		})
	}
	wg.Wait()
	time.Sleep(3 * h.giveBackAfter) //nolint:forbidigo // waiting for something not to happen
	require.Zero(t, given.Load(), "given back while a run held its slot")
	h.release()
	require.Eventually(t, func() bool { return given.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

	// Within h.every, a second burst waits for the interval's end.
	_, err := h.hash(context.Background(), "password1")
	require.NoError(t, err)
	time.Sleep(3 * h.giveBackAfter) //nolint:forbidigo // waiting for something not to happen
	require.EqualValues(t, 1, given.Load(), "given back twice within h.every")
	h.mu.Lock()
	pending := h.pending != nil
	h.mu.Unlock()
	require.True(t, pending, "the second burst's return is scheduled at the interval's end")

	// Once closed, nothing is scheduled or given back.
	h.close()
	_, err = h.hash(context.Background(), "password1")
	require.NoError(t, err)
	h.mu.Lock()
	pending = h.pending != nil
	h.mu.Unlock()
	require.False(t, pending, "a return scheduled after close")
	require.EqualValues(t, 1, given.Load())
}
