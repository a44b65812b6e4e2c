package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
)

type sseEvent struct {
	name string
	data map[string]any
}

// readSSE collects the events of a stream until it ends.
func readSSE(t *testing.T, url, token string) []sseEvent {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/event-stream")
	var out []sseEvent
	name := "message"
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d))
			out = append(out, sseEvent{name, d})
			name = "message"
		}
	}
	return out
}

func TestStreamTokensThenTheRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	admin := e.signup("admin@example.com")
	f := e.llmAgent(admin, nil, 0)
	e.do("POST", "/api/v1/worker/pause", nil, bearer(admin)).expect(t, 200)
	id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "stream me"}}, bearer(admin)).expect(t, 201).str("activation_id")

	got := make(chan []sseEvent, 1)
	go func() { got <- readSSE(t, e.url+"/api/v1/activations/"+id+"/stream", admin) }()
	// The stream subscribes before it reads the (queued) state; resuming
	// any time after the request starts is safe.
	e.do("POST", "/api/v1/worker/resume", nil, bearer(admin)).expect(t, 200)
	var evs []sseEvent
	select {
	case evs = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream never ended")
	}
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	require.Equal(t, "activation", last.name)
	require.Equal(t, "completed", last.data["status"])
	response := last.data["output_data"].(map[string]any)["response"].(string)
	var text strings.Builder
	for _, ev := range evs[:len(evs)-1] {
		require.Equal(t, "token", ev.name)
		text.WriteString(ev.data["delta"].(string))
	}
	// Tokens published before the stream subscribed are not replayed: what
	// arrived is a suffix of the answer, usually all of it.
	require.True(t, strings.HasSuffix(response, text.String()), "%q vs %q", text.String(), response)

	// An ended activation: the record at once. Another user's: an error event.
	evs = readSSE(t, e.url+"/api/v1/activations/"+id+"/stream", admin)
	require.Len(t, evs, 1)
	require.Equal(t, "activation", evs[0].name)
	other := e.signup("other@example.com")
	e.do("GET", "/api/v1/activations/"+id+"/stream", nil, bearer(other)).expectError(t, 404, "NotFoundError", "Activation not found")
}
