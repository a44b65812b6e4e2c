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

func newApp(t testing.TB, s *store.Store, userID, slug string) *store.App {
	t.Helper()
	now := store.Now()
	a := &store.App{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: slug, Slug: slug, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AppCreate(context.Background(), a))
	return a
}

func newAgent(t testing.TB, s *store.Store, app *store.App, name, description string) *store.Agent {
	t.Helper()
	now := store.Now()
	a := &store.Agent{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: app.UserID, Name: name, Description: description,
		AgentTypeID: "llm", Version: "1.0.0", Status: "active", TimeoutSeconds: 300, Config: json.RawMessage(`{"model":"echo"}`),
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AgentCreate(context.Background(), a))
	return a
}

func TestAppsStore(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@example.com", false)
		v := newUser(t, s, "b@example.com", false)
		one := newApp(t, s, u.ID, "one")
		two := newApp(t, s, u.ID, "two")
		newApp(t, s, v.ID, "one")

		got, err := s.AppGet(ctx, one.ID)
		require.NoError(t, err)
		require.Equal(t, "private", got.MarketplaceStatus, "defaults")
		require.Equal(t, "1.0.0", got.Version)
		require.JSONEq(t, `{}`, string(got.Manifest))
		bySlug, err := s.AppGetBySlug(ctx, u.ID, "two")
		require.NoError(t, err)
		require.Equal(t, two.ID, bySlug.ID)
		_, err = s.AppGetBySlug(ctx, u.ID, "three")
		require.ErrorIs(t, err, store.ErrNotFound)

		apps, total, err := s.AppListByUser(ctx, u.ID, "", 10, 0)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Equal(t, two.ID, apps[0].ID, "newest first")
		apps, total, err = s.AppListByUser(ctx, u.ID, one.ID, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, one.ID, apps[0].ID)

		got.MarketplaceStatus, got.Manifest, got.Status = "published", json.RawMessage(`{"minPlatformVersion":"0.1.0"}`), "disabled"
		require.NoError(t, s.AppUpdate(ctx, got))
		pub, total, err := s.AppListPublished(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, "disabled", pub[0].Status)
		require.JSONEq(t, `{"minPlatformVersion":"0.1.0"}`, string(pub[0].Manifest))

		// Agents: the owner's, narrowed by app and search; system ones for all.
		sys := &store.Agent{ID: "00000000-0000-7000-8000-0000000000ff", Name: "sys", AgentTypeID: "llm", Version: "1", TimeoutSeconds: 300, CreatedAt: store.Now()}
		require.NoError(t, s.AgentUpsertSystem(ctx, sys))
		sys.Description = "updated"
		require.NoError(t, s.AgentUpsertSystem(ctx, sys), "seeding is idempotent")
		a1 := newAgent(t, s, one, "alpha", "Handles 100% of the_cases")
		newAgent(t, s, two, "beta", "second")
		list := func(f store.AgentFilter) []string {
			agents, total, err := s.AgentList(ctx, f, 10, 0)
			require.NoError(t, err)
			require.Equal(t, len(agents), total)
			var names []string
			for _, a := range agents {
				names = append(names, a.Name)
			}
			return names
		}
		require.Equal(t, []string{"sys", "alpha", "beta"}, list(store.AgentFilter{UserID: u.ID, System: true}))
		require.Equal(t, []string{"alpha", "beta"}, list(store.AgentFilter{UserID: u.ID}))
		require.Equal(t, []string{"alpha"}, list(store.AgentFilter{UserID: u.ID, AppID: one.ID, System: true}))
		require.Equal(t, []string{"sys"}, list(store.AgentFilter{UserID: v.ID, System: true}))
		require.Equal(t, []string{"sys"}, list(store.AgentFilter{System: true, Search: "UPDATED"}))
		require.Equal(t, []string{"alpha"}, list(store.AgentFilter{UserID: u.ID, Search: "100%"}))
		require.Empty(t, list(store.AgentFilter{UserID: u.ID, Search: "0_c"}), "_ is literal")
		require.Equal(t, []string{"alpha"}, list(store.AgentFilter{UserID: u.ID, Search: "e_c"}))

		dup := *a1
		dup.ID = uuid.NewString()
		require.ErrorIs(t, s.AgentCreate(ctx, &dup), store.ErrConflict, "names are unique per app")
		a1.Config, a1.SecretEnc, a1.Capabilities = json.RawMessage(`{"model":"other"}`), "v1:sealed", []string{"x"}
		require.NoError(t, s.AgentUpdate(ctx, a1))
		back, err := s.AgentGet(ctx, a1.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"model":"other"}`, string(back.Config))
		require.Equal(t, "v1:sealed", back.SecretEnc)
		require.Equal(t, []string{"x"}, back.Capabilities)

		// Parts of each kind, and the cascade when the app goes.
		now := store.Now()
		m := &store.AppModel{ID: uuid.NewString(), AppID: one.ID, Slug: "ticket", Name: "Ticket", Fields: json.RawMessage(`[{"name":"a","type":"string"}]`), CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AppModelCreate(ctx, m, 0))
		m.Name = "Tickets"
		require.NoError(t, s.AppModelUpdate(ctx, m))
		f := &store.Function{ID: uuid.NewString(), AppID: one.ID, UserID: u.ID, Name: "f", Code: "c", InputSchema: json.RawMessage(`{"type":"object"}`), TimeoutSeconds: 30, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.FunctionCreate(ctx, f))
		p := &store.Pipeline{ID: uuid.NewString(), AppID: one.ID, UserID: u.ID, Name: "p", Steps: json.RawMessage(`[{"id":"s"}]`), CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.PipelineCreate(ctx, p))
		au := &store.Authenticator{ID: uuid.NewString(), AppID: one.ID, Name: "crm", AuthenticatorType: "custom", Scopes: []string{"r"}, IsActive: true, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AuthenticatorCreate(ctx, au))
		au.ClientSecretEnc = "v1:x"
		require.NoError(t, s.AuthenticatorUpdate(ctx, au))
		require.ErrorIs(t, s.AuthenticatorCreate(ctx, &store.Authenticator{ID: uuid.NewString(), AppID: one.ID, Name: "crm", AuthenticatorType: "custom", CreatedAt: now, UpdatedAt: now}), store.ErrConflict)

		models, err := s.AppModelListByApp(ctx, one.ID)
		require.NoError(t, err)
		require.Equal(t, "Tickets", models[0].Name)
		gotF, err := s.FunctionGet(ctx, f.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object"}`, string(gotF.InputSchema))
		gotP, err := s.PipelineGet(ctx, p.ID)
		require.NoError(t, err)
		require.JSONEq(t, `[{"id":"s"}]`, string(gotP.Steps))
		gotA, err := s.AuthenticatorGet(ctx, au.ID)
		require.NoError(t, err)
		require.Equal(t, "v1:x", gotA.ClientSecretEnc)
		require.Equal(t, []string{"r"}, gotA.Scopes)
		require.Equal(t, u.ID, gotA.UserID, "read with its app's owner")
		later := &store.Authenticator{ID: uuid.NewString(), AppID: one.ID, Name: "crm2", AuthenticatorType: "custom", CreatedAt: now.Add(time.Second), UpdatedAt: now}
		require.NoError(t, s.AuthenticatorCreate(ctx, later))
		page, total, err := s.AuthenticatorPage(ctx, one.ID, 1, 1)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, page, 1)
		require.Equal(t, "crm2", page[0].Name, "in creation order")
		require.Equal(t, u.ID, page[0].UserID)

		require.NoError(t, s.AppDelete(ctx, one.ID))
		require.ErrorIs(t, s.AppDelete(ctx, one.ID), store.ErrNotFound)
		for _, err := range []error{
			func() error { _, err := s.AgentGet(ctx, a1.ID); return err }(),
			func() error { _, err := s.FunctionGet(ctx, f.ID); return err }(),
			func() error { _, err := s.PipelineGet(ctx, p.ID); return err }(),
			func() error { _, err := s.AuthenticatorGet(ctx, au.ID); return err }(),
		} {
			require.ErrorIs(t, err, store.ErrNotFound, "deleting an app deletes its parts")
		}
		models, err = s.AppModelListByApp(ctx, one.ID)
		require.NoError(t, err)
		require.Empty(t, models)
		_, err = s.AgentGet(ctx, sys.ID)
		require.NoError(t, err)
	})
}

// TestAgentInputSchemaStored: a custom agent's input_schema is stored and
// read back by every agent read, changed and removed by an update; an
// agent without one reads back nil, not {} (nothing to validate, nothing
// to export).
func TestAgentInputSchemaStored(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "schema@example.com", false)
		app := newApp(t, s, u.ID, "schemas")
		plain := newAgent(t, s, app, "plain", "")
		now := store.Now()
		custom := &store.Agent{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: u.ID, Name: "custom", AgentTypeID: "custom",
			Version: "1.0.0", Status: "active", TimeoutSeconds: 300, Config: json.RawMessage(`{"runtime":"javascript","code":"x"}`),
			InputSchema: json.RawMessage(`{"type":"object","required":["subject"]}`), CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AgentCreate(ctx, custom))

		got, err := s.AgentGet(ctx, custom.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object","required":["subject"]}`, string(got.InputSchema))
		got, err = s.AgentGet(ctx, plain.ID)
		require.NoError(t, err)
		require.Nil(t, got.InputSchema)
		listed, err := s.AgentListByApp(ctx, app.ID)
		require.NoError(t, err)
		require.Len(t, listed, 2)
		require.Nil(t, listed[0].InputSchema)
		require.JSONEq(t, `{"type":"object","required":["subject"]}`, string(listed[1].InputSchema))

		custom.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
		require.NoError(t, s.AgentUpdate(ctx, custom))
		got, err = s.AgentGet(ctx, custom.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`, string(got.InputSchema))
		custom.InputSchema = nil
		require.NoError(t, s.AgentUpdate(ctx, custom))
		got, err = s.AgentGet(ctx, custom.ID)
		require.NoError(t, err)
		require.Nil(t, got.InputSchema)
	})
}

// TestAgentGetWithApp: the agent and its app's status in one read.
func TestAgentGetWithApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "with-app@example.com", false)
		app := newApp(t, s, u.ID, "with-app")
		ag := newAgent(t, s, app, "triage", "sorts")

		got, status, err := s.AgentGetWithApp(ctx, ag.ID)
		require.NoError(t, err)
		require.Equal(t, ag.ID, got.ID)
		require.Equal(t, "triage", got.Name)
		require.Equal(t, "active", status)

		app.Status, app.UpdatedAt = "disabled", store.Now()
		require.NoError(t, s.AppUpdate(ctx, app))
		_, status, err = s.AgentGetWithApp(ctx, ag.ID)
		require.NoError(t, err)
		require.Equal(t, "disabled", status)

		_, _, err = s.AgentGetWithApp(ctx, uuid.NewString())
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestAgentGetInApp: an agent of the user's own app by the app's id or
// slug and the agent's name, with its app's status and whether a function
// or pipeline of the app shares its name, in one read; another user's app
// or agent is not found.
func TestAgentGetInApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "in-app@example.com", false)
		v := newUser(t, s, "other-in-app@example.com", false)
		app := newApp(t, s, u.ID, "mine")
		theirs := newApp(t, s, v.ID, "theirs")
		ag := newAgent(t, s, app, "triage", "sorts")
		newAgent(t, s, app, "flow", "a name a pipeline shares")
		newAgent(t, s, theirs, "triage", "not u's")
		now := store.Now()
		require.NoError(t, s.PipelineCreate(ctx, &store.Pipeline{ID: uuid.NewString(), AppID: app.ID, UserID: u.ID, Name: "flow",
			Steps: json.RawMessage(`[]`), CreatedAt: now, UpdatedAt: now}))

		for _, by := range [][2]string{{app.ID, ""}, {"", "mine"}} {
			got, status, shared, err := s.AgentGetInApp(ctx, u.ID, by[0], by[1], "triage")
			require.NoError(t, err)
			require.Equal(t, ag.ID, got.ID)
			require.Equal(t, "active", status)
			require.False(t, shared)
			_, _, shared, err = s.AgentGetInApp(ctx, u.ID, by[0], by[1], "flow")
			require.NoError(t, err)
			require.True(t, shared, "a pipeline is named flow too")
			_, _, _, err = s.AgentGetInApp(ctx, u.ID, by[0], by[1], "nobody")
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		_, _, _, err := s.AgentGetInApp(ctx, u.ID, theirs.ID, "", "triage")
		require.ErrorIs(t, err, store.ErrNotFound, "another user's app by id")
		_, _, _, err = s.AgentGetInApp(ctx, u.ID, "", "theirs", "triage")
		require.ErrorIs(t, err, store.ErrNotFound, "another user's app by slug")

		app.Status, app.UpdatedAt = "disabled", store.Now()
		require.NoError(t, s.AppUpdate(ctx, app))
		_, status, _, err := s.AgentGetInApp(ctx, u.ID, "", "mine", "triage")
		require.NoError(t, err)
		require.Equal(t, "disabled", status)
	})
}
