package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// AgentToActivate answers from memory: every change of the agent
// or of its app, committed alone or in a transaction, shows in the next
// read, and what a caller does to the agent it was given stays its own.
func TestAgentToActivateSeesEveryChange(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@example.com", false)
		app := newApp(t, s, u.ID, "one")
		ag := newAgent(t, s, app, "bot", "")
		read := func() (*store.Agent, string) {
			t.Helper()
			got, status, err := s.AgentToActivate(ctx, ag.ID)
			require.NoError(t, err)
			return got, status
		}

		got, status := read()
		require.JSONEq(t, `{"model":"echo"}`, string(got.Config))
		require.Equal(t, "active", status)
		got.Config[2] = 'X'
		got.Capabilities = append(got.Capabilities, "mine")
		got, _ = read()
		require.JSONEq(t, `{"model":"echo"}`, string(got.Config), "a caller's change of its copy")
		require.Empty(t, got.Capabilities)

		ag.Config = json.RawMessage(`{"model":"two"}`)
		require.NoError(t, s.AgentUpdate(ctx, ag))
		got, _ = read()
		require.JSONEq(t, `{"model":"two"}`, string(got.Config), "an update alone")

		ag.Config = json.RawMessage(`{"model":"three"}`)
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.AgentUpdate(ctx, ag) }))
		got, _ = read()
		require.JSONEq(t, `{"model":"three"}`, string(got.Config), "an update in a transaction")

		ag.Config = json.RawMessage(`{"model":"four"}`)
		require.Error(t, s.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, tx.AgentUpdate(ctx, ag))
			return context.Canceled
		}))
		got, _ = read()
		require.JSONEq(t, `{"model":"three"}`, string(got.Config), "a rolled-back update")

		app.Status = "disabled"
		require.NoError(t, s.AppUpdate(ctx, app))
		_, status = read()
		require.Equal(t, "disabled", status, "the app's status")

		require.NoError(t, s.AppDelete(ctx, app.ID))
		_, _, err := s.AgentToActivate(ctx, ag.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "the app's deletion takes its agents")

		other := newAgent(t, s, newApp(t, s, u.ID, "two"), "bot", "")
		read2 := func() error { _, _, err := s.AgentToActivate(ctx, other.ID); return err }
		require.NoError(t, read2())
		require.NoError(t, s.AgentDelete(ctx, other.ID))
		require.ErrorIs(t, read2(), store.ErrNotFound, "the agent's deletion")
	})
}

// AgentToActivateInApp answers from memory too, by the app's id or its
// slug: a renamed agent, a function or a pipeline taking or giving up the
// agent's name (shared), and the app's status show in the next read,
// committed alone or in a transaction; another user's name is not found.
func TestAgentToActivateInAppSeesEveryChange(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u, v := newUser(t, s, "a@example.com", false), newUser(t, s, "b@example.com", false)
		app := newApp(t, s, u.ID, "one")
		ag := newAgent(t, s, app, "bot", "")
		type read struct {
			ID, Status string
			Shared     bool
			Err        error
		}
		readIn := func(user, appID, slug, name string) read {
			a, status, shared, err := s.AgentToActivateInApp(ctx, user, appID, slug, name)
			if err != nil {
				return read{Err: err}
			}
			return read{a.ID, status, shared, nil}
		}
		byID := func(user, name string) read { return readIn(user, app.ID, "", name) }
		bySlug := func(slug, name string) read { return readIn(u.ID, "", slug, name) }
		found := read{ID: ag.ID, Status: "active"}
		notFound := read{Err: store.ErrNotFound}
		for range 2 { // the second from memory
			require.Equal(t, found, byID(u.ID, "bot"))
			require.Equal(t, found, bySlug("one", "bot"))
			require.Equal(t, notFound, byID(v.ID, "bot"), "another user's app")
		}

		ag.Name = "helper"
		require.NoError(t, s.AgentUpdate(ctx, ag))
		require.Equal(t, notFound, byID(u.ID, "bot"), "the agent renamed")
		require.Equal(t, found, bySlug("one", "helper"))

		app.Status = "disabled"
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.AppUpdate(ctx, app) }))
		disabled := found
		disabled.Status = "disabled"
		require.Equal(t, disabled, bySlug("one", "helper"), "the app's status")
		app.Status = "active"
		require.NoError(t, s.AppUpdate(ctx, app))
		require.Equal(t, found, bySlug("one", "helper"))

		now := store.Now()
		shared := found
		shared.Shared = true
		f := &store.Function{ID: uuid.NewString(), AppID: app.ID, UserID: u.ID, Name: "helper", Code: "c", TimeoutSeconds: 30, CreatedAt: now, UpdatedAt: now}
		p := &store.Pipeline{ID: uuid.NewString(), AppID: app.ID, UserID: u.ID, Name: "helper", CreatedAt: now, UpdatedAt: now}
		for _, part := range []struct {
			kind           string
			create, delete func() error
			rename         func(name string) error
		}{
			{"function", func() error { return s.FunctionCreate(ctx, f) }, func() error { return s.FunctionDelete(ctx, f.ID) },
				func(name string) error { f.Name = name; return s.FunctionUpdate(ctx, f) }},
			{"pipeline", func() error { return s.InTx(ctx, func(tx *store.Store) error { return tx.PipelineCreate(ctx, p) }) },
				func() error { return s.PipelineDelete(ctx, p.ID) },
				func(name string) error { p.Name = name; return s.PipelineUpdate(ctx, p) }},
		} {
			require.NoError(t, part.create())
			require.Equal(t, shared, byID(u.ID, "helper"), "a %s of the name", part.kind)
			require.NoError(t, part.rename("other"))
			require.Equal(t, found, byID(u.ID, "helper"), "the %s renamed", part.kind)
			require.NoError(t, part.rename("helper"))
			require.Equal(t, shared, bySlug("one", "helper"))
			require.NoError(t, part.delete())
			require.Equal(t, found, bySlug("one", "helper"), "the %s deleted", part.kind)
		}

		require.NoError(t, s.AgentDelete(ctx, ag.ID))
		require.Equal(t, notFound, byID(u.ID, "helper"), "the agent deleted")
	})
}

// On PostgreSQL other processes change agents too: a process answers from
// its cache for at most its time to live, and an activation of an agent
// deleted meanwhile is ErrNotFound, not a fault.
func TestAgentCacheAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.Migrated(t, store.Postgres)
	open := func() *store.Store {
		s, err := store.Open(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	one, two := open(), open()
	u := newUser(t, one, "a@example.com", false)
	ag := newAgent(t, one, newApp(t, one, u.ID, "one"), "bot", "")
	configOnTwo := func() string {
		got, _, err := two.AgentToActivate(ctx, ag.ID)
		require.NoError(t, err)
		return string(got.Config)
	}

	store.SetAgentCacheTTL(two, time.Hour)
	require.JSONEq(t, `{"model":"echo"}`, configOnTwo())
	ag.Config = json.RawMessage(`{"model":"two"}`)
	require.NoError(t, one.AgentUpdate(ctx, ag))
	require.JSONEq(t, `{"model":"echo"}`, configOnTwo(), "the other process answers from its cache")
	fresh, _, err := two.AgentGetWithApp(ctx, ag.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"model":"two"}`, string(fresh.Config), "but reads what a user sees anew")
	store.SetAgentCacheTTL(two, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		var c struct{ Model string }
		return json.Unmarshal([]byte(configOnTwo()), &c) == nil && c.Model == "two"
	},
		5*time.Second, 10*time.Millisecond, "and reads again once its entry has lived its time")

	store.SetAgentCacheTTL(two, time.Hour)
	cached, _, err := two.AgentToActivate(ctx, ag.ID)
	require.NoError(t, err)
	require.NoError(t, one.AgentDelete(ctx, ag.ID))
	_, _, err = two.AgentToActivate(ctx, ag.ID)
	require.NoError(t, err, "still cached on the other process")
	now := store.Now()
	err = two.ActivationCreate(ctx, &store.Activation{ID: uuid.NewString(), UserID: cached.UserID, AppID: cached.AppID, AgentID: cached.ID,
		Status: store.StatusQueued, Priority: 2, CreatedAt: now})
	require.ErrorIs(t, err, store.ErrNotFound, "an activation of the deleted agent")
}
