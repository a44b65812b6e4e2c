package auth_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// runningActivation makes an app of c's user with a custom agent and a
// running activation of it.
func runningActivation(t *testing.T, st *store.Store, userID string) *store.Activation {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	app := &store.App{ID: uuid.NewString(), UserID: userID, Name: "a", Slug: "a-" + uuid.NewString()[:8], CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.AppCreate(ctx, app))
	ag := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: userID, Name: "w", AgentTypeID: "custom", Version: "1.0.0",
		Status: "active", TimeoutSeconds: 30, Config: json.RawMessage(`{"runtime":"webhook","url":"https://example.com"}`),
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.AgentCreate(ctx, ag))
	a := &store.Activation{ID: uuid.NewString(), UserID: userID, AppID: app.ID, AgentID: ag.ID, Status: store.StatusQueued,
		InputData: json.RawMessage(`{}`), Priority: 2, CreatedAt: now}
	require.NoError(t, st.ActivationCreate(ctx, a))
	claimed, ok, err := st.ActivationClaim(ctx, a.ID, "w1", now)
	require.NoError(t, err)
	require.True(t, ok)
	return claimed
}

// TestAgentKeyLifetime: an agent key authenticates as its user, bound to
// its app and activation, while the activation runs; it is refused at once
// when the activation ends (its row goes with the hourly cleanup), and a
// new run of the activation replaces it.
func TestAgentKeyLifetime(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		st := testdb.Open(t, d)
		s, err := auth.New(st, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1},
			RegistrationOpen: true, SessionTTL: time.Hour})
		require.NoError(t, err)
		signIn(t, s, "admin@example.com") // the first user is the admin
		owner, _ := signIn(t, s, "owner@example.com")

		// Ended by its end's transaction.
		a := runningActivation(t, st, owner.UserID)
		key, err := s.IssueAgentKey(ctx, a)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(key, auth.PrefixAgentKey), key)
		c, err := s.Authenticate(ctx, key)
		require.NoError(t, err)
		require.Equal(t, auth.KindAgentKey, c.Kind)
		require.Equal(t, owner.UserID, c.UserID)
		require.Equal(t, a.AppID, c.AppID)
		require.Equal(t, a.ID, c.ActivationID)
		require.Empty(t, c.Scopes)
		_, err = s.Hold(ctx, c)
		require.ErrorIs(t, err, auth.ErrForbidden, "an agent key holds no connection")

		_, _, err = st.ActivationFinish(ctx, a.ID, store.Outcome{Status: store.StatusCompleted, CompletedAt: store.Now()})
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, key)
		require.ErrorIs(t, err, auth.ErrInvalidAgentKey)
		require.True(t, apperr.Is(err, apperr.Authentication))

		// Ended without the key's row being deleted (a cancel recorded
		// elsewhere): refused all the same.
		b := runningActivation(t, st, owner.UserID)
		first, err := s.IssueAgentKey(ctx, b)
		require.NoError(t, err)
		second, err := s.IssueAgentKey(ctx, b) // the run started again
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, first)
		require.ErrorIs(t, err, auth.ErrInvalidAgentKey, "a new run's key replaces the old one")
		_, err = s.Authenticate(ctx, second)
		require.NoError(t, err)
		_, _, err = st.ActivationCancel(ctx, b.ID, "Activation cancelled", store.Now())
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, second)
		require.ErrorIs(t, err, auth.ErrInvalidAgentKey)
		// A run that starts after its activation ended gets no key.
		_, err = s.IssueAgentKey(ctx, b)
		require.ErrorIs(t, err, auth.ErrActivationEnded)

		// The hourly cleanup deletes the rows of ended runs' keys, not of
		// running ones.
		running := runningActivation(t, st, owner.UserID)
		live, err := s.IssueAgentKey(ctx, running)
		require.NoError(t, err)
		_, err = s.CleanupSessions(ctx)
		require.NoError(t, err)
		var rows int
		require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM agent_keys`).Scan(&rows))
		require.Equal(t, 1, rows, "only the running activation's key is left")
		_, err = s.Authenticate(ctx, live)
		require.NoError(t, err)

		// Unknown keys, and a disabled account's.
		_, err = s.Authenticate(ctx, auth.PrefixAgentKey+"nope")
		require.ErrorIs(t, err, auth.ErrInvalidAgentKey)
		c2 := runningActivation(t, st, owner.UserID)
		third, err := s.IssueAgentKey(ctx, c2)
		require.NoError(t, err)
		off := false
		_, err = s.UpdateFlags(ctx, owner.UserID, auth.FlagsPatch{IsActive: &off})
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, third)
		require.ErrorIs(t, err, auth.ErrAccountOff)
	})
}
