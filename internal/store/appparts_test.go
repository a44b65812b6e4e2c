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

func TestAppPartList(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "parts@example.com", false)
		v := newUser(t, s, "other@example.com", false)
		one, two := newApp(t, s, u.ID, "one"), newApp(t, s, u.ID, "two")
		newAgent(t, s, newApp(t, s, v.ID, "theirs"), "triage", "not u's")

		later := store.Now().Add(time.Second)
		f := &store.Function{ID: uuid.NewString(), AppID: one.ID, UserID: u.ID, Name: "triage", Description: "a function",
			Code: "c", InputSchema: json.RawMessage(`{"type":"object","required":["q"]}`), TimeoutSeconds: 30, CreatedAt: later, UpdatedAt: later}
		require.NoError(t, s.FunctionCreate(ctx, f))
		p := &store.Pipeline{ID: uuid.NewString(), AppID: two.ID, UserID: u.ID, Name: "flow", Description: "a pipeline",
			Steps: json.RawMessage(`[{"id":"s"}]`), CreatedAt: later, UpdatedAt: later}
		require.NoError(t, s.PipelineCreate(ctx, p))
		b := newAgent(t, s, one, "billing", "bills")
		a := newAgent(t, s, one, "triage", "sorts")
		c := newAgent(t, s, two, "helper", "helps")

		type part struct{ Kind, ID, App, Name, Desc, Type, Schema string }
		list := func(appID string, names ...string) []part {
			parts, err := s.AppPartList(ctx, u.ID, appID, names...)
			require.NoError(t, err)
			out := []part{}
			for _, p := range parts {
				out = append(out, part{p.Kind, p.ID, p.AppID, p.Name, p.Description, p.AgentTypeID, string(p.InputSchema)})
			}
			return out
		}
		fn := part{"function", f.ID, one.ID, "triage", "a function", "", ""}
		got := list(one.ID)
		require.Len(t, got, 3)
		require.Equal(t, []string{b.ID, a.ID, f.ID}, []string{got[0].ID, got[1].ID, got[2].ID}, "agents, then functions, each in creation order")
		require.Equal(t, part{"agent", a.ID, one.ID, "triage", "sorts", "llm", ""}, got[1], "no input_schema: nil")
		require.JSONEq(t, string(f.InputSchema), got[2].Schema)
		fn.Schema = got[2].Schema
		require.Equal(t, fn, got[2])

		all := list("")
		require.Len(t, all, 5, "every app of the user's, none of another user's")
		require.Equal(t, []string{"agent", "agent", "agent", "function", "pipeline"},
			[]string{all[0].Kind, all[1].Kind, all[2].Kind, all[3].Kind, all[4].Kind})
		require.Equal(t, c.ID, all[2].ID)
		require.Equal(t, p.ID, all[4].ID)

		named := list("", "triage", "nothing")
		require.Len(t, named, 2)
		require.Equal(t, []string{a.ID, f.ID}, []string{named[0].ID, named[1].ID})
		require.Empty(t, list(two.ID, "triage"))
		require.Empty(t, list(uuid.NewString()))
	})
}

func TestAgentGetByName(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "names@example.com", false)
		one, two := newApp(t, s, u.ID, "one"), newApp(t, s, u.ID, "two")
		a := newAgent(t, s, one, "triage", "")
		newAgent(t, s, two, "triage", "")
		sys := &store.Agent{ID: uuid.NewString(), Name: "assistant", AgentTypeID: "llm", Version: "1.0.0", TimeoutSeconds: 60,
			Config: json.RawMessage(`{}`), CreatedAt: store.Now()}
		require.NoError(t, s.AgentUpsertSystem(ctx, sys))

		got, err := s.AgentGetByName(ctx, one.ID, "triage")
		require.NoError(t, err)
		require.Equal(t, a.ID, got.ID)
		got, err = s.AgentGetByName(ctx, "", "assistant")
		require.NoError(t, err)
		require.Equal(t, sys.ID, got.ID)
		for _, miss := range [][2]string{{one.ID, "assistant"}, {"", "triage"}, {one.ID, "nobody"}} {
			_, err = s.AgentGetByName(ctx, miss[0], miss[1])
			require.ErrorIs(t, err, store.ErrNotFound, miss)
		}
	})
}
