package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// seen is what the test server was asked.
type seen struct {
	mu                    sync.Mutex
	method, query, body   string
	idempotency, authz    string
	contentType, accepted string
}

func (s *seen) get() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seen{method: s.method, query: s.query, body: s.body, idempotency: s.idempotency, authz: s.authz,
		contentType: s.contentType, accepted: s.accepted}
}

// outside is a server of the outside world (127.0.0.2) answering each
// path as its handler says, remembering the last request.
func outside(t *testing.T) (*httptest.Server, *seen) {
	s := &seen{}
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.method, s.query, s.body = r.Method, r.URL.RawQuery, string(b)
		s.idempotency, s.authz = r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization")
		s.contentType, s.accepted = r.Header.Get("Content-Type"), r.Header.Get("Accept")
	}
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		_, _ = io.WriteString(w, "plain words")
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		http.Error(w, `{"error":"no such city"}`+strings.Repeat(" and more", 100), http.StatusNotFound)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		_, _ = w.Write([]byte(`"` + strings.Repeat("x", tool.MaxHTTPBody) + `"`))
	})
	return egresstest.NewServer(t, mux), s
}

// tokens is a TokenSource with one token per authenticator.
type tokens map[string]string

func (ts tokens) AccessToken(_ context.Context, _, _, authenticator string) (string, error) {
	if tok, ok := ts[authenticator]; ok {
		return tok, nil
	}
	return "", errors.New("no connected account for " + authenticator)
}

func guardedClient(t *testing.T) *http.Client {
	c := egress.New(egresstest.AllowPrefixes()).Client(egress.Options{Field: "url"})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// buildOne builds the one tool of spec with kit k.
func buildOne(t *testing.T, k *tool.Kit, spec string) tool.Tool {
	t.Helper()
	cfg, err := tool.ParseConfig(json.RawMessage(`{"tools":[` + spec + `]}`))
	require.NoError(t, err)
	set, err := k.Build(context.Background(), &executor.Run{ID: uuid.NewString(), UserID: "u", AppID: "a"}, cfg)
	require.NoError(t, err)
	t.Cleanup(set.Close)
	require.Len(t, set.Tools, 1)
	return set.Tools[0]
}

func call(t *testing.T, tl tool.Tool, args string) (json.RawMessage, error) {
	t.Helper()
	run := &executor.Run{ID: "act-1", UserID: "u", AppID: "a"}
	return tl.Call(context.Background(), tool.Call{ID: "call-1", Arguments: json.RawMessage(args), IdempotencyKey: "act-1:call-1", Run: run})
}

// TestHTTPTool: arguments go as query parameters for GET and DELETE and as
// a JSON body otherwise, every call carries its Idempotency-Key, a
// connection sends its token as Bearer, the result is {status, body}; a
// non-2xx, a body over 1 MiB and a private address are the call's error.
func TestHTTPTool(t *testing.T) {
	t.Parallel()
	srv, got := outside(t)
	k := &tool.Kit{HTTP: guardedClient(t), Credentials: tokens{"crm": "tok-123"}}

	t.Run("GET query", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"weather","description":"Weather","method":"GET","url":"`+srv.URL+`/json?units=metric",
			"parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`)
		def := tl.Definition()
		require.Equal(t, "weather", def.Name)
		require.Equal(t, "Weather", def.Description)
		require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}}}`, string(def.Parameters))
		require.False(t, tl.Waits())
		out, err := call(t, tl, `{"city":"Paris","days":[1,2],"exact":true,"none":null}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"status":200,"body":{"ok":true}}`, string(out))
		s := got.get()
		require.Equal(t, "GET", s.method)
		require.Equal(t, "city=Paris&days=1&days=2&exact=true&units=metric", s.query)
		require.Empty(t, s.body)
		require.Equal(t, "act-1:call-1", s.idempotency)
		require.Empty(t, s.authz, "no connection, no token")
		require.Equal(t, "application/json", s.accepted)
	})

	t.Run("POST JSON body with a connection", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"create","method":"POST","url":"`+srv.URL+`/text","connection":"crm"}`)
		require.JSONEq(t, `{"type":"object"}`, string(tl.Definition().Parameters))
		out, err := call(t, tl, `{"title":"Hello","n":2}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"status":200,"body":"plain words"}`, string(out), "a body that is not JSON is a string")
		s := got.get()
		require.Equal(t, "POST", s.method)
		require.JSONEq(t, `{"title":"Hello","n":2}`, s.body)
		require.Equal(t, "application/json", s.contentType)
		require.Equal(t, "Bearer tok-123", s.authz)
		require.Equal(t, "act-1:call-1", s.idempotency)
	})

	t.Run("DELETE query", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"del","method":"DELETE","url":"`+srv.URL+`/json"}`)
		_, err := call(t, tl, `{"id":"7"}`)
		require.NoError(t, err)
		require.Equal(t, "DELETE", got.get().method)
		require.Equal(t, "id=7", got.get().query)
	})

	t.Run("connection without an account", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"h","method":"PUT","url":"`+srv.URL+`/json","connection":"mail"}`)
		_, err := call(t, tl, `{}`)
		require.ErrorContains(t, err, "connection mail: no connected account for mail")
	})

	t.Run("non-2xx", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"h","method":"GET","url":"`+srv.URL+`/missing"}`)
		_, err := call(t, tl, `{}`)
		require.ErrorContains(t, err, "answered HTTP 404")
		require.ErrorContains(t, err, `{"error":"no such city"}`)
		require.Less(t, len(err.Error()), 500, "the error quotes a short body")
	})

	t.Run("body cap", func(t *testing.T) {
		tl := buildOne(t, k, `{"type":"http","name":"h","method":"GET","url":"`+srv.URL+`/huge"}`)
		_, err := call(t, tl, `{}`)
		require.ErrorContains(t, err, "more than 1 MiB")
	})

	t.Run("private address", func(t *testing.T) {
		inside := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the guard let a call through") }))
		defer inside.Close()
		tl := buildOne(t, k, `{"type":"http","name":"h","method":"GET","url":"`+inside.URL+`/x"}`)
		_, err := call(t, tl, `{}`)
		require.ErrorContains(t, err, "127.0.0.1")
		require.ErrorContains(t, err, egress.Variable)
	})
}

// TestClientTool: a client tool waits and is never called; approval
// "always" makes any tool wait.
func TestClientTool(t *testing.T) {
	t.Parallel()
	tl := buildOne(t, &tool.Kit{}, `{"type":"client","name":"pick","description":"Pick a file","parameters":{"type":"object","properties":{"kind":{"type":"string"}}}}`)
	require.True(t, tl.Waits())
	require.Equal(t, "pick", tl.Definition().Name)
	_, err := call(t, tl, `{}`)
	require.Error(t, err)

	tl = buildOne(t, &tool.Kit{}, `{"type":"http","name":"h","method":"GET","url":"https://x.example","approval":"always"}`)
	require.True(t, tl.Waits())
	require.Equal(t, 86400, tl.Spec().TimeoutSeconds)
}
