package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestPreferWait: create-and-wait on every activate form. The answer comes
// when the activation has ended, with the full record (the simple form: its
// reduced shape) and Preference-Applied.
func TestPreferWait(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		f := s.agent
		forms := []struct {
			name, path string
			body       map[string]any
		}{
			{"simple", "/api/v1/agents/" + f.agentID + "/activate", s.input("a")},
			{"app", "/api/v1/apps/" + f.appID + "/agents/" + f.agentID + "/activate", s.input("b")},
			{"activations", "/api/v1/activations", map[string]any{"agent_id": f.agentID, "input_data": map[string]any{"prompt": "c"}}},
		}
		for _, form := range forms {
			r := s.do("POST", form.path, form.body, bearer(s.token), header("Prefer", "wait=30")).expect(t, 201)
			require.Equal(t, "wait=30", r.Header.Get("Preference-Applied"), form.name)
			require.Equal(t, "completed", r.str("status"), "%s: %s", form.name, r.Body)
			id := r.str("activation_id")
			require.Equal(t, "/api/v1/activations/"+id, r.Header.Get("Location"), form.name)
			if form.name == "simple" {
				require.Len(t, r.JSON, 3, "the simple form keeps its shape: %s", r.Body)
				continue
			}
			require.Equal(t, "reply to: "+form.body["input_data"].(map[string]any)["prompt"].(string),
				r.JSON["output_data"].(map[string]any)["response"], form.name)
		}

		// Several preferences, parameters and spaces, as RFC 7240 allows;
		// more than 60 s is taken as 60.
		r := s.do("POST", forms[2].path, forms[2].body, bearer(s.token), header("Prefer", `respond-async; x=1, wait = "600"`)).expect(t, 201)
		require.Equal(t, "wait=60", r.Header.Get("Preference-Applied"))
		require.Equal(t, "completed", r.str("status"))

		// Without Prefer: no waiting, no Preference-Applied.
		r = s.do("POST", forms[1].path, forms[1].body, bearer(s.token)).expect(t, 201)
		require.Empty(t, r.Header.Get("Preference-Applied"))

		// A bad wait is a 400 naming the header, and creates nothing.
		_, before := s.countActivations()
		for _, bad := range []string{"wait=abc", "wait=-1", "wait=1.5", "wait=", "wait"} {
			s.do("POST", forms[0].path, forms[0].body, bearer(s.token), header("Prefer", bad)).expectError(t, 400, "ValidationError", "Prefer")
		}
		_, after := s.countActivations()
		require.Equal(t, before, after)
	})
}

func (s *streamEnv) countActivations() (*resp, int) {
	r := s.do("GET", "/api/v1/activations?limit=1", nil, bearer(s.token)).expect(s.t, 200)
	return r, int(r.JSON["total_count"].(float64))
}

// TestPreferWaitTimesOut: an activation still running after N s is
// answered in its current state.
func TestPreferWaitTimesOut(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		release := s.fake.Block()
		defer release()
		start := time.Now()
		r := s.do("POST", "/api/v1/apps/"+s.agent.appID+"/agents/"+s.agent.agentID+"/activate", s.input("slow"),
			bearer(s.token), header("Prefer", "wait=1")).expect(t, 201)
		require.GreaterOrEqual(t, time.Since(start), time.Second)
		require.Equal(t, "wait=1", r.Header.Get("Preference-Applied"))
		require.Equal(t, "running", r.str("status"), "%s", r.Body)
		require.Nil(t, r.JSON["output_data"])

		// The simple form: its shape, the status of the moment.
		r = s.do("POST", "/api/v1/agents/"+s.agent.agentID+"/activate", s.input("slow too"),
			bearer(s.token), header("Prefer", "wait=1")).expect(t, 201)
		require.Equal(t, "processing", r.str("status"), "%s", r.Body)
		require.Equal(t, "wait=1", r.Header.Get("Preference-Applied"))
		release()
		s.await(s.token, r.str("activation_id"))
	})
}

// TestIdempotentReplayWaitsAndStreams: a replayed activate call answers
// with the first activation, waited for or streamed as asked.
func TestIdempotentReplayWaitsAndStreams(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		path := "/api/v1/apps/" + s.agent.appID + "/agents/" + s.agent.agentID + "/activate"
		key := header("Idempotency-Key", "k-1")
		first := s.do("POST", path, s.input("once"), bearer(s.token), key).expect(t, 201)
		id := first.str("activation_id")

		r := s.do("POST", path, s.input("once"), bearer(s.token), key, header("Prefer", "wait=30")).expect(t, 201)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, "wait=30", r.Header.Get("Preference-Applied"))
		require.Equal(t, id, r.str("activation_id"))
		require.Equal(t, "completed", r.str("status"))

		st := s.openSSE("POST", path, s.input("once"), bearer(s.token), key, header("Accept", "text/event-stream"))
		require.Equal(t, http.StatusCreated, st.res.StatusCode)
		require.Equal(t, "true", st.res.Header.Get("Idempotent-Replayed"))
		require.Equal(t, "/api/v1/activations/"+id, st.res.Header.Get("Location"))
		evs := st.rest()
		require.Equal(t, "reply to: once", tokens(t, evs[:len(evs)-1], 1))
		require.Equal(t, id, evs[len(evs)-1].data["activation_id"])

		// A refused call with Accept: text/event-stream is a JSON error.
		r = s.do("POST", path, s.input("other body"), bearer(s.token), key, header("Accept", "text/event-stream"))
		r.expectError(t, 409, "ConflictError", "Idempotency-Key")
		r = s.do("POST", path, map[string]any{}, bearer(s.token), header("Accept", "text/event-stream"))
		r.expectError(t, 400, "ValidationError", "input_data")
	})
}

// TestActivateAndStreamEveryForm: all three activate calls stream.
func TestActivateAndStreamEveryForm(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := newStreamEnv(t, d)
		f := s.agent
		for _, c := range []struct {
			path string
			body map[string]any
		}{
			{"/api/v1/apps/" + f.appID + "/agents/" + f.agentID + "/activate", s.input("x")},
			{"/api/v1/activations", map[string]any{"agent_id": f.agentID, "input_data": map[string]any{"prompt": "x"}}},
		} {
			// Stream wins over Prefer: wait.
			st := s.openSSE("POST", c.path, c.body, bearer(s.token), header("Accept", "application/json;q=0.5, text/event-stream"), header("Prefer", "wait=5"))
			require.Equal(t, http.StatusCreated, st.res.StatusCode, c.path)
			require.Empty(t, st.res.Header.Get("Preference-Applied"))
			evs := st.rest()
			require.Equal(t, "reply to: x", tokens(t, evs[:len(evs)-1], 1))
			require.Equal(t, "completed", evs[len(evs)-1].data["status"])
		}
	})
}
