package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// runNodeWith is runNode with more AP_* settings.
func runNodeWith(t *testing.T, dsn string, api bool, vars map[string]string) *server.Server {
	t.Helper()
	env := map[string]string{"AP_DATA_DIR": t.TempDir(), "AP_SECRET_KEY": b64key(7), "AP_DATABASE_URL": dsn, "AP_ADDR": "127.0.0.1:0"}
	for k, v := range vars {
		env[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	cfg.NoWorker = api
	require.NoError(t, cfg.Validate())
	srv, err := server.New(context.Background(), cfg, testdb.Logger(),
		server.Options{HTTP: api, Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	if api {
		require.NoError(t, srv.Listen())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return srv
}

// sse is one event of a stream: its id, name and data.
type sse struct {
	id, name string
	data     map[string]any
}

// readSSE reads events from r until n have come or the stream ends.
func readSSE(t *testing.T, r *bufio.Reader, n int) []sse {
	t.Helper()
	var out []sse
	cur := sse{}
	for n < 0 || len(out) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimRight(line, "\n")
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "id":
			cur.id = value
		case "event":
			cur.name = value
		case "data":
			require.NoError(t, json.Unmarshal([]byte(value), &cur.data))
		case "":
			if cur.data != nil {
				out = append(out, cur)
			}
			cur = sse{}
		}
	}
	return out
}

// TestStreamCrossNodes is the scale-out path of create-and-stream: the
// client talks to an API node, a worker node runs the activation; the
// tokens reach the stream from the first, and a stream opened late on the
// API node gets the ones already sent.
func TestStreamCrossNodes(t *testing.T) {
	t.Parallel()
	dsn := testdb.URL(t, store.Postgres)
	fake := llmtest.NewOpenAI(t)
	fake.SetReply("one two three four five")
	vars := map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test"}
	apiNode := runNodeWith(t, dsn, true, vars)
	runNodeWith(t, dsn, false, vars)
	base := apiNode.URL()
	waitReady(t, base)

	creds := url.Values{"email": {"s@example.com"}, "password": {"password1"}, "confirm_password": {"password1"}}
	for _, path := range []string{"/api/v1/auth/register", "/api/v1/auth/login"} {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(creds.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
		res.Body.Close()
		if tok, ok := m["access_token"].(string); ok {
			creds.Set("token", tok)
		}
		if id, ok := m["id"].(string); ok {
			creds.Set("user", id)
		}
	}
	token, userID := creds.Get("token"), creds.Get("user")
	require.NotEmpty(t, token)
	ctx := context.Background()
	now := store.Now()
	app := &store.App{ID: uuid.NewString(), UserID: userID, Name: "Desk", Slug: "desk", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, apiNode.Store.AppCreate(ctx, app))
	agent := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: userID, Name: "a", AgentTypeID: "llm", Version: "1.0.0",
		Status: "active", TimeoutSeconds: 60, Config: json.RawMessage(`{"model":"gpt","provider_id":"openai"}`), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, apiNode.Store.AgentCreate(ctx, agent))

	open := func(method, path, body string, h map[string]string) (*http.Response, *bufio.Reader) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res, bufio.NewReader(res.Body)
	}

	reached, release := fake.HoldAfter(2)
	defer release()
	res, r := open("POST", "/api/v1/agents/"+agent.ID+"/activate", `{"input_data":{"prompt":"hi"}}`, map[string]string{"Accept": "text/event-stream"})
	require.Equal(t, http.StatusCreated, res.StatusCode)
	id := strings.TrimPrefix(res.Header.Get("Location"), "/api/v1/activations/")
	<-reached
	first := readSSE(t, r, 2)
	require.Len(t, first, 2)
	require.Equal(t, sse{"1", "token", map[string]any{"delta": "one "}}, first[0])
	require.Equal(t, sse{"2", "token", map[string]any{"delta": "two "}}, first[1])
	res.Body.Close() // its copy of the tokens goes with it

	// Opened late, on the API node: the worker node sends what it has.
	res, r = open("GET", "/api/v1/activations/"+id+"/stream", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	late := readSSE(t, r, 2)
	require.Equal(t, first, late)
	release()
	rest := readSSE(t, r, -1)
	require.Len(t, rest, 4)
	require.Equal(t, sse{"5", "token", map[string]any{"delta": "five"}}, rest[2])
	require.Equal(t, "end", rest[3].id)
	require.Equal(t, "completed", rest[3].data["status"])

	res, _ = open("GET", "/api/v1/activations/"+id+"/stream", "", map[string]string{"Last-Event-ID": "end"})
	require.Equal(t, http.StatusNoContent, res.StatusCode)
}
