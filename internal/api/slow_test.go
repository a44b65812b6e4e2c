package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
)

// TestSlowAnswerWithABody: a request with a body may take as long as its
// operation allows (here Prefer: wait over a run of 6 s, past huma's
// default 5 s body read deadline), and its keep-alive connection then
// serves the next request.
func TestSlowAnswerWithABody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")
	fake := llmtest.NewOpenAI(t)
	_, f := e.userProvider(token, "Slow", fake)
	fake.SetDelay(6 * time.Second)

	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	send := func(method, path string, body any, headers ...string) (*http.Response, []byte, bool) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			j, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(j)
		}
		req, err := http.NewRequest(method, e.url+path, rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		reused := false
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}))
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, b, reused
	}

	start := time.Now()
	res, body, _ := send("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"message": "hi"}},
		"Prefer", "wait=20")
	require.Equal(t, http.StatusCreated, res.StatusCode, "body: %s", body)
	require.GreaterOrEqual(t, time.Since(start), 6*time.Second)
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out))
	require.Equal(t, "completed", out["status"], "body: %s", body)

	res, body, reused := send("GET", "/api/v1/users/me", nil)
	require.Equal(t, http.StatusOK, res.StatusCode, "body: %s", body)
	require.True(t, reused, "the second request came on a new connection")
}
