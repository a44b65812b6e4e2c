package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func newAuthenticator(t *testing.T, s *store.Store, app *store.App, name string) *store.Authenticator {
	t.Helper()
	now := store.Now()
	a := &store.Authenticator{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, Name: name, AuthenticatorType: "custom",
		Scopes: []string{"read"}, IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AuthenticatorCreate(context.Background(), a))
	return a
}

func TestConnectionsStore(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@example.com", false)
		app := newApp(t, s, u.ID, "one")
		auth := newAuthenticator(t, s, app, "crm")
		now := store.Now()
		due := now.Add(-time.Second)
		c := &store.Connection{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, AppID: app.ID, AuthenticatorID: auth.ID,
			Status: store.ConnConnected, AccessTokenEnc: "v1:a", RefreshTokenEnc: "v1:r", TokenType: "Bearer",
			Scopes: []string{"read"}, ExpiresAt: &now, ConnectedAt: now, NextRefreshAt: &due, UpdatedAt: now}
		require.NoError(t, s.ConnectionSave(ctx, c))
		require.EqualValues(t, 1, c.Version)
		id := c.ID

		target, err := s.CredentialTargetGet(ctx, u.ID, app.ID, "crm")
		require.NoError(t, err)
		require.Equal(t, u.ID, target.Authenticator.UserID, "the app's owner")
		require.Equal(t, auth.ID, target.Authenticator.ID)
		require.NotNil(t, target.Connection)
		require.Equal(t, "v1:a", target.Connection.AccessTokenEnc)
		require.Equal(t, now, *target.Connection.ExpiresAt)
		_, err = s.CredentialTargetGet(ctx, u.ID, app.ID, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
		other := newUser(t, s, "b@example.com", false)
		target, err = s.CredentialTargetGet(ctx, other.ID, app.ID, "crm")
		require.NoError(t, err)
		require.Nil(t, target.Connection, "another user's connection is not the caller's")

		// The lease: exactly one of many takers wins; a lease that ran out
		// can be taken; an outcome is written over the version it started from only.
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.TakeLease(ctx, "connections", id, uuid.NewString()+string(rune('a'+i)), now, now.Add(time.Minute))
				require.NoError(t, err)
				if ok {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
		ok, err := s.TakeLease(ctx, "connections", id, "late", now.Add(2*time.Minute), now.Add(3*time.Minute))
		require.NoError(t, err)
		require.True(t, ok, "a lease that ended can be taken")
		c.AccessTokenEnc = "v1:b"
		require.True(t, errors.Is(s.ConnectionFinishRefresh(ctx, c, 7), store.ErrConnectionChanged), "a stale outcome")
		require.NoError(t, s.ConnectionFinishRefresh(ctx, c, 1))
		require.EqualValues(t, 2, c.Version)
		got, err := s.ConnectionGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "v1:b", got.AccessTokenEnc)
		require.Empty(t, got.LeaseOwner)
		ok, err = s.TakeLease(ctx, "connections", id, "x", now, now.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, ok, "finishing ends the lease")
		// A reconnection replaces the tokens and ends the lease, so the
		// refresh under way cannot write over them.
		c.AccessTokenEnc = "v1:c"
		c.ID = uuid.NewString()
		require.NoError(t, s.ConnectionSave(ctx, c))
		require.Equal(t, id, c.ID)
		require.EqualValues(t, 3, c.Version)
		require.ErrorIs(t, s.ConnectionFinishRefresh(ctx, c, 2), store.ErrConnectionChanged)
		got, err = s.ConnectionGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "v1:c", got.AccessTokenEnc)
		require.Empty(t, got.LeaseOwner)
		_, err = s.TakeLease(ctx, "users", id, "x", now, now)
		require.Error(t, err)

		// Due connections are claimed once until their retry time.
		ids, err := s.ConnectionsClaimDue(ctx, now, now.Add(2*time.Minute), 10)
		require.NoError(t, err)
		require.Equal(t, []string{id}, ids)
		ids, err = s.ConnectionsClaimDue(ctx, now, now.Add(2*time.Minute), 10)
		require.NoError(t, err)
		require.Empty(t, ids)
		ids, err = s.ConnectionsClaimDue(ctx, now.Add(3*time.Minute), now.Add(4*time.Minute), 10)
		require.NoError(t, err)
		require.Equal(t, []string{id}, ids)

		cs, total, err := s.ConnectionList(ctx, u.ID, app.ID, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Len(t, cs, 1)
		cs, total, err = s.ConnectionList(ctx, other.ID, "", 10, 0)
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, cs)

		// States are single-use.
		st := &store.OAuthState{StateHash: []byte("hash-1"), UserID: u.ID, AppID: app.ID, AuthenticatorID: auth.ID,
			ReturnTo: "/", ExpiresAt: now.Add(10 * time.Minute), CreatedAt: now}
		require.NoError(t, s.OAuthStateCreate(ctx, st))
		peek, err := s.OAuthStateGet(ctx, st.StateHash)
		require.NoError(t, err)
		require.Equal(t, u.ID, peek.UserID)
		var taken atomic.Int32
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.OAuthStateTake(ctx, st.StateHash); err == nil {
					taken.Add(1)
				} else {
					require.ErrorIs(t, err, store.ErrNotFound)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, taken.Load())
		st.StateHash = []byte("hash-2")
		st.ExpiresAt = now.Add(-time.Second)
		require.NoError(t, s.OAuthStateCreate(ctx, st))
		n, err := s.OAuthStateDeleteExpired(ctx, now)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		// The authenticator's end ends its connections.
		require.NoError(t, s.AuthenticatorDelete(ctx, auth.ID))
		_, err = s.ConnectionGet(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
