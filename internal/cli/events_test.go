package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// post sends a form (JSON answer) or a JSON body and decodes the answer.
func post(t *testing.T, u, token string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	ct := "application/json"
	if form, ok := body.(url.Values); ok {
		rd, ct = strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"
	} else {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(http.MethodPost, u, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, "POST %s: %s", u, b)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return out
}

// TestEventsFindsTheServer: `agentplatform events` connects where AP_ADDR
// says the server listens (an unspecified host meaning this machine),
// unless --url says otherwise, and names the address it could not reach.
func TestEventsFindsTheServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, environ(dir))
	addr := strings.TrimPrefix(p.URL, "http://")
	_, port, _ := strings.Cut(addr, ":")

	form := url.Values{"email": {"u@example.com"}, "password": {"password1"}, "confirm_password": {"password1"}}
	post(t, p.URL+"/api/v1/auth/register", "", form)
	token := post(t, p.URL+"/api/v1/auth/login", "", url.Values{"email": form["email"], "password": form["password"]})["access_token"].(string)
	code, agents := get(t, p.URL+"/api/v1/agents?search=assistant", "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, code, agents)
	var list struct {
		Agents []struct {
			AgentID string `json:"agent_id"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(agents), &list))
	require.NotEmpty(t, list.Agents, agents)
	post(t, p.URL+"/api/v1/agents/"+list.Agents[0].AgentID+"/activate", token, map[string]any{"input_data": map[string]any{"prompt": "hi"}})

	events := []string{"events", "--token", token, "--since", "0", "--count", "1"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"AP_ADDR", []string{"AP_ADDR=" + addr}, nil},
		{"AP_ADDR on every interface", []string{"AP_ADDR=0.0.0.0:" + port}, nil},
		{"--url over AP_ADDR", []string{"AP_ADDR=127.0.0.1:1"}, []string{"--url", p.URL + "/"}},
	} {
		r := run(t, environ(t.TempDir(), tc.env...), "", append(events, tc.args...)...)
		require.Equal(t, 0, r.code, "%s: %s", tc.name, r)
		require.Contains(t, r.stdout, `"type":"activation_created"`, tc.name)
	}

	r := run(t, environ(t.TempDir(), "AP_ADDR=127.0.0.1:1"), "", events...)
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "ws://127.0.0.1:1/api/v1/ws", "the error names where it tried")
	r = run(t, environ(t.TempDir()), "", append(events, "--url", "ftp://"+addr)...)
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "--url")
	p.stop()
}
