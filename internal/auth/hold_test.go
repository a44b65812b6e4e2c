package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func newService(t *testing.T, d store.Dialect, opts auth.Options) *auth.Service {
	t.Helper()
	opts.Password = auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}
	opts.RegistrationOpen = true
	if opts.SessionTTL == 0 {
		opts.SessionTTL = time.Hour
	}
	s, err := auth.New(testdb.Open(t, d), testdb.Logger(), opts)
	require.NoError(t, err)
	return s
}

func signIn(t *testing.T, s *auth.Service, email string) (*auth.Caller, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Register(ctx, auth.Registration{Email: email, Password: "password1", ConfirmPassword: "password1"}); err != nil {
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
	}
	sess, err := s.Login(ctx, email, "password1")
	require.NoError(t, err)
	c, err := s.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	return c, sess.Token
}

func requireEnded(t *testing.T, h *auth.Hold, within time.Duration) {
	t.Helper()
	select {
	case <-h.Ended():
		require.ErrorIs(t, context.Cause(h.Context()), auth.ErrCredentialEnded)
	case <-time.After(within):
		t.Fatal("the hold outlived its credential")
	}
}

// TestHoldEndsAtSessionExpiry: a held connection ends when its session
// expires, without anything polling.
func TestHoldEndsAtSessionExpiry(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		const ttl = 1500 * time.Millisecond
		s := newService(t, d, auth.Options{SessionTTL: ttl})
		before := time.Now()
		c, _ := signIn(t, s, "a@example.com")
		after := time.Now()
		h, err := s.Hold(context.Background(), c)
		require.NoError(t, err)
		defer h.Release()
		select {
		case <-h.Ended():
			t.Fatal("ended before the expiry")
		case <-time.After(time.Until(before.Add(ttl - 100*time.Millisecond))):
		}
		requireEnded(t, h, time.Until(after.Add(ttl+time.Second)))
	})
}

// TestHoldAfterChange: a credential that ended between authentication and
// Hold is refused, as a new request would be; one still valid is held.
func TestHoldAfterChange(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := newService(t, d, auth.Options{})
		c, token := signIn(t, s, "a@example.com")
		other, _ := signIn(t, s, "a@example.com")
		require.NoError(t, s.Logout(ctx, token))
		_, err := s.Hold(ctx, c)
		require.ErrorIs(t, err, auth.ErrInvalidSession)
		h, err := s.Hold(ctx, other)
		require.NoError(t, err)
		defer h.Release()
		require.Equal(t, 1, s.Held(c.UserID))

		// A change heard from another node re-checks what this node holds.
		s.ChangedElsewhere(c.UserID)
		select {
		case <-h.Ended():
			t.Fatal("a valid session's hold ended")
		default:
		}
	})
}

// TestHoldCap: a user holds at most MaxConnections; Release frees a place.
func TestHoldCap(t *testing.T) {
	t.Parallel()
	s := newService(t, store.SQLite, auth.Options{MaxConnections: 2})
	c, _ := signIn(t, s, "a@example.com")
	d, _ := signIn(t, s, "b@example.com")
	ctx := context.Background()
	h1, err := s.Hold(ctx, c)
	require.NoError(t, err)
	h2, err := s.Hold(ctx, c)
	require.NoError(t, err)
	_, err = s.Hold(ctx, c)
	var e *apperr.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, apperr.RateLimit, e.Kind)
	require.Contains(t, e.Detail, "at most 2")
	hd, err := s.Hold(ctx, d)
	require.NoError(t, err, "another user has their own places")
	h1.Release()
	h1.Release()
	h3, err := s.Hold(ctx, c)
	require.NoError(t, err)
	for _, h := range []*auth.Hold{h2, h3, hd} {
		h.Release()
	}
	require.Zero(t, s.Held(c.UserID))
	require.ErrorIs(t, context.Cause(h2.Context()), context.Canceled)
}
