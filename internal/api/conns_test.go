package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func authHeader(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// openSocket opens /api/v1/ws with token and fails the test if refused.
func (e *env) openSocket(token string) *websocket.Conn {
	e.t.Helper()
	c, status := e.socket("", authHeader(token))
	require.Equal(e.t, http.StatusSwitchingProtocols, status)
	return c
}

// requireCredentialClose reads c until it ends and asserts it ended with
// close code 4401 within a second of since, having received no event.
func requireCredentialClose(t *testing.T, c *websocket.Conn, since time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	require.Error(t, err, "an event arrived after the credential ended: %s", data)
	require.Equal(t, websocket.StatusCode(4401), websocket.CloseStatus(err), "closed with: %v", err)
	require.Less(t, time.Since(since), time.Second, "closed too late")
}

// TestSocketEndsWithItsCredential: an open WebSocket closes with 4401 as soon
// as the credential that opened it ends (logout, revocation, password change,
// disabled account, key expiry) and gets nothing after; sockets on
// credentials that are still valid go on.
func TestSocketEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		alice := e.signup("alice@example.com")
		aliceID := e.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200).str("id")
		live := func(cs ...*websocket.Conn) {
			t.Helper()
			ev := e.emit(aliceID, events.ActivationCompleted, "app1")
			for _, c := range cs {
				require.EqualValues(t, ev.Seq, readEvent(t, c)["seq"])
			}
		}

		// Logout.
		session := e.login("alice@example.com", "password1")
		c := e.openSocket(session)
		live(c)
		e.do("POST", "/api/v1/auth/logout", nil, bearer(session), acceptJSON).expect(t, 204)
		at := time.Now()
		e.emit(aliceID, events.ActivationCompleted, "app1")
		requireCredentialClose(t, c, at)

		// Key revocation; another key of the same user keeps its socket.
		key, keyID := e.key(alice, map[string]any{"name": "k", "scopes": []string{"read:all"}})
		other := e.keyWith(alice, "read:all")
		c = e.openSocket(key)
		kept := e.openSocket(other)
		live(c, kept)
		e.do("DELETE", "/api/v1/user/api-keys/"+itoa(keyID), nil, bearer(alice)).expect(t, 204)
		at = time.Now()
		ev := e.emit(aliceID, events.ActivationCompleted, "app1")
		requireCredentialClose(t, c, at)
		require.EqualValues(t, ev.Seq, readEvent(t, kept)["seq"])

		// Password change ends the other sessions, not the one that changed it.
		session = e.login("alice@example.com", "password1")
		c = e.openSocket(session)
		mine := e.openSocket(alice)
		live(c, mine, kept)
		e.do("POST", "/api/v1/users/me/password", map[string]any{"current_password": "password1", "new_password": "password2"},
			bearer(alice)).expect(t, 204)
		at = time.Now()
		ev = e.emit(aliceID, events.ActivationCompleted, "app1")
		requireCredentialClose(t, c, at)
		require.EqualValues(t, ev.Seq, readEvent(t, mine)["seq"])
		require.EqualValues(t, ev.Seq, readEvent(t, kept)["seq"])

		// A disabled account loses every socket, sessions' and keys' alike.
		e.do("PATCH", "/api/v1/users/"+aliceID, map[string]any{"is_active": false}, bearer(admin)).expect(t, 200)
		at = time.Now()
		e.emit(aliceID, events.ActivationCompleted, "app1")
		requireCredentialClose(t, mine, at)
		requireCredentialClose(t, kept, at)
		e.do("PATCH", "/api/v1/users/"+aliceID, map[string]any{"is_active": true}, bearer(admin)).expect(t, 200)

		// A key's expiry ends its socket when it comes.
		expires := time.Now().Add(1500 * time.Millisecond)
		short, _ := e.key(admin, map[string]any{"name": "short", "scopes": []string{"read:all"}, "expires_at": expires.UTC().Format(time.RFC3339Nano)})
		c = e.openSocket(short)
		requireCredentialClose(t, c, expires)
	})
}

// TestSocketEndsAcrossNodes: on PostgreSQL, a credential ended on one node
// closes the sockets it opened on another.
func TestSocketEndsAcrossNodes(t *testing.T) {
	t.Parallel()
	dsn := testdb.URL(t, store.Postgres)
	a := newEnv(t, store.Postgres, map[string]string{"AP_DATABASE_URL": dsn})
	b := newEnv(t, store.Postgres, map[string]string{"AP_DATABASE_URL": dsn})
	admin := a.signup("admin@example.com")
	alice := a.signup("alice@example.com")
	aliceID := a.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200).str("id")

	key, keyID := a.key(alice, map[string]any{"name": "k", "scopes": []string{"read:all"}})
	c := b.openSocket(key)
	a.do("DELETE", "/api/v1/user/api-keys/"+itoa(keyID), nil, bearer(alice)).expect(t, 204)
	at := time.Now()
	a.emit(aliceID, events.ActivationCompleted, "app1")
	requireCredentialClose(t, c, at)

	session := a.login("alice@example.com", "password1")
	c = b.openSocket(session)
	a.do("POST", "/api/v1/auth/logout", nil, bearer(session), acceptJSON).expect(t, 204)
	requireCredentialClose(t, c, time.Now())

	c = b.openSocket(alice)
	a.do("PATCH", "/api/v1/users/"+aliceID, map[string]any{"is_active": false}, bearer(admin)).expect(t, 200)
	requireCredentialClose(t, c, time.Now())
}

// heldStream is an open GET …/stream: ended is closed when the server ends it.
type heldStream struct {
	ended  chan struct{}
	mu     sync.Mutex
	status int
	data   strings.Builder
}

// openHeldStream starts streaming activationID and returns once the server
// holds the stream (the headers may come only with the first event).
func (e *env) openHeldStream(activationID, token, userID string) *heldStream {
	e.t.Helper()
	held := e.srv.Auth.Held(userID)
	req, err := http.NewRequest("GET", e.url+"/api/v1/activations/"+activationID+"/stream", nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	ctx, cancel := context.WithCancel(context.Background())
	s := &heldStream{ended: make(chan struct{})}
	e.t.Cleanup(func() { cancel(); <-s.ended })
	go func() {
		defer close(s.ended)
		res, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return
		}
		defer res.Body.Close()
		s.mu.Lock()
		s.status = res.StatusCode
		s.mu.Unlock()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			s.mu.Lock()
			s.data.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.srv.Auth.Held(userID) == held {
		require.True(e.t, time.Now().Before(deadline), "the stream was never held")
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

func (s *heldStream) requireEnded(t *testing.T, since time.Time) {
	t.Helper()
	select {
	case <-s.ended:
		require.Less(t, time.Since(since), time.Second, "ended too late")
	case <-time.After(5 * time.Second):
		t.Fatal("the stream stayed open after its credential ended")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEqual(t, http.StatusTooManyRequests, s.status)
	require.NotContains(t, s.data.String(), "event: activation", "no record after the credential ended")
}

// TestStreamEndsWithItsCredential: an SSE stream ends as soon as the
// credential that opened it does.
func TestStreamEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		// The run waits on a blocked LLM, so the stream has no end of its
		// own (a paused queue may still run an activation it already got).
		fake := llmtest.NewOpenAI(t)
		release := fake.Block()
		e := newEnv(t, d, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test"})
		t.Cleanup(release) // before the server stops, so that it need not wait for the run
		admin := e.signup("admin@example.com")
		adminID := e.do("GET", "/api/v1/users/me", nil, bearer(admin)).expect(t, 200).str("id")
		f := e.llmAgent(admin, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}},
			bearer(admin)).expect(t, 201).str("activation_id")

		key, keyID := e.key(admin, map[string]any{"name": "k", "scopes": []string{"read:all"}})
		s := e.openHeldStream(id, key, adminID)
		e.do("DELETE", "/api/v1/user/api-keys/"+itoa(keyID), nil, bearer(admin)).expect(t, 204)
		s.requireEnded(t, time.Now())

		session := e.login("admin@example.com", "password1")
		s = e.openHeldStream(id, session, adminID)
		e.do("POST", "/api/v1/auth/logout", nil, bearer(session), acceptJSON).expect(t, 204)
		s.requireEnded(t, time.Now())
	})
}

// TestConnectionsPerUserCapped: WebSockets and SSE streams share one cap
// per user (100); beyond it the handshake answers 429 with the error body.
func TestConnectionsPerUserCapped(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	release := fake.Block() // the run does not end while the test runs, nor does its stream
	e := newEnv(t, store.SQLite, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test"})
	t.Cleanup(release) // before the server stops, so that it need not wait for the run
	admin := e.signup("admin@example.com")
	adminID := e.do("GET", "/api/v1/users/me", nil, bearer(admin)).expect(t, 200).str("id")
	bob := e.signup("bob@example.com")
	f := e.llmAgent(admin, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
	id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}},
		bearer(admin)).expect(t, 201).str("activation_id")
	key := e.keyWith(admin, "read:all")

	const limit = 100
	var socks []*websocket.Conn
	for i := range limit - 1 {
		token := admin
		if i%2 == 0 {
			token = key // sessions and keys of a user count together
		}
		socks = append(socks, e.openSocket(token))
	}
	e.openHeldStream(id, admin, adminID)

	_, status := e.socket("", authHeader(key))
	require.Equal(t, http.StatusTooManyRequests, status)
	r := e.do("GET", "/api/v1/ws", nil, bearer(admin), header("Upgrade", "websocket"), header("Connection", "Upgrade")).
		expectError(t, 429, "RateLimitError", "connections")
	require.Equal(t, "60", r.Header.Get("Retry-After"))
	e.do("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(admin)).expectError(t, 429, "RateLimitError", "connections")
	e.openSocket(bob) // another user is not affected

	// A closed connection frees its place.
	require.NoError(t, socks[0].Close(websocket.StatusNormalClosure, ""))
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, status := e.socket("", authHeader(admin))
		if status == http.StatusSwitchingProtocols {
			c.CloseNow()
			break
		}
		require.Equal(t, http.StatusTooManyRequests, status)
		require.True(t, time.Now().Before(deadline), "the closed socket's place was never freed")
		time.Sleep(10 * time.Millisecond)
	}
}
