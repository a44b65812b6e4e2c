package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

// platform is a client of a running server: a user, a key and an agent.
type platform struct {
	t     *testing.T
	base  string
	key   string
	agent string
}

func (p *platform) call(method, path, token string, body, out any) int {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	require.NoError(p.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := httpClient.Do(req)
	require.NoError(p.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(p.t, err)
	if out != nil && res.StatusCode < 300 {
		require.NoError(p.t, json.Unmarshal(data, out), "%s", data)
	}
	require.Less(p.t, res.StatusCode, 300, "%s %s: %s", method, path, data)
	return res.StatusCode
}

// setupPlatform registers a user, makes a key and imports an app whose one
// agent calls the openai system provider (the slow test LLM).
func setupPlatform(t *testing.T, base string) *platform {
	return setupPlatformWith(t, base, map[string]any{"model": "gpt-test", "provider_id": "openai", "temperature": 0.2})
}

// setupPlatformWith is setupPlatform with the agent's agent_config.
func setupPlatformWith(t *testing.T, base string, agentConfig map[string]any) *platform {
	return setupPlatformAs(t, base, "crash@example.com", true, agentConfig)
}

// setupPlatformAs is setupPlatformWith for the user email; admin asks for
// a key with the admin scope, which only the instance's first user, its
// admin, may have.
func setupPlatformAs(t *testing.T, base, email string, admin bool, agentConfig map[string]any) *platform {
	p := &platform{t: t, base: base}
	creds := map[string]string{"email": email, "password": "password1", "confirm_password": "password1"}
	p.call("POST", "/api/v1/auth/register", "", creds, nil)
	var login struct {
		Token string `json:"access_token"`
	}
	p.call("POST", "/api/v1/auth/login", "", creds, &login)
	var key struct {
		Key string `json:"key"`
	}
	// The first user is an admin; the admin scope lets the key see the
	// worker processes in /worker/status.
	scopes := []string{"write:all"}
	if admin {
		scopes = append(scopes, "admin")
	}
	p.call("POST", "/api/v1/user/api-keys", login.Token, map[string]any{"name": "k", "scopes": scopes}, &key)
	p.key = key.Key
	var app struct {
		AppID string `json:"app_id"`
	}
	agentType := "llm"
	if agentConfig["runtime"] != nil {
		agentType = "custom"
	}
	p.call("POST", "/api/v1/apps/import-manifest", p.key, map[string]any{
		"name": "Crash", "slug": "crash", "version": "1.0.0",
		"agents": []any{map[string]any{"name": "slow", "agent_type_id": agentType, "version": "1.0.0",
			"agent_config": agentConfig}},
	}, &app)
	var agents struct {
		Agents []struct {
			ID string `json:"agent_id"`
		} `json:"agents"`
	}
	p.call("GET", "/api/v1/apps/"+app.AppID+"/agents", p.key, nil, &agents)
	require.Len(t, agents.Agents, 1)
	p.agent = agents.Agents[0].ID
	return p
}

// activate creates n activations, 16 at a time, and returns their ids.
func (p *platform) activate(n int) []string {
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var a struct {
				ID string `json:"activation_id"`
			}
			p.call("POST", "/api/v1/agents/"+p.agent+"/activate", p.key, map[string]any{"input_data": map[string]any{"prompt": fmt.Sprint("n", i)}}, &a)
			ids[i] = a.ID
		}()
	}
	wg.Wait()
	return ids
}

type activationState struct {
	ID     string  `json:"activation_id"`
	Status string  `json:"status"`
	Error  *string `json:"error"`
}

// states reads every activation of the user.
func (p *platform) states() map[string]activationState {
	var list struct {
		Activations []activationState `json:"activations"`
	}
	p.call("GET", "/api/v1/activations?limit=1000", p.key, nil, &list)
	out := map[string]activationState{}
	for _, a := range list.Activations {
		out[a.ID] = a
	}
	return out
}

func (p *platform) count(status string) int {
	n := 0
	for _, a := range p.states() {
		if a.Status == status {
			n++
		}
	}
	return n
}

// awaitAllEnded waits until every id has ended and returns their states.
func (p *platform) awaitAllEnded(ids []string, within time.Duration) map[string]activationState {
	deadline := time.Now().Add(within)
	for {
		states := p.states()
		ended := 0
		for _, id := range ids {
			if st := states[id].Status; st == "completed" || st == "failed" {
				ended++
			}
		}
		if ended == len(ids) {
			return states
		}
		require.True(p.t, time.Now().Before(deadline), "%d of %d activations ended after %s", ended, len(ids), within)
		time.Sleep(250 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
}

// killMidway starts the server with env and an agent of agentConfig,
// creates n activations, kills the server with SIGKILL once k have
// completed, restarts it on the same data and returns every activation's
// state once all have ended, and the client of the restarted server.
func killMidway(t *testing.T, env []string, agentConfig map[string]any, n, k int) (*platform, []string, map[string]activationState) {
	first := startServe(t, env)
	p := setupPlatformWith(t, first.URL, agentConfig)
	ids := p.activate(n)
	deadline := time.Now().Add(60 * time.Second)
	for p.count("completed") < k {
		require.True(t, time.Now().Before(deadline), "nothing completed before the kill")
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
	first.signal(syscall.SIGKILL)
	first.wait(stopTimeout)

	second := startServe(t, env)
	t.Cleanup(second.stop)
	p.base = second.URL
	return p, ids, p.awaitAllEnded(ids, 2*time.Minute)
}

// TestKill9LosesNothing: 200 activations against a slow LLM, the server
// killed with SIGKILL mid-way and restarted on the same data: within two
// minutes every activation has ended, completed or failed with a reason;
// none is stuck queued or running, none is missing.
func TestKill9LosesNothing(t *testing.T) {
	t.Parallel()
	slow := llmtest.NewOpenAI(t)
	slow.SetDelay(300 * time.Millisecond)
	env := environ(t.TempDir(), "AP_OPENAI_BASE_URL="+slow.URL, "AP_OPENAI_API_KEY=sk-test", "AP_MAX_INFLIGHT=8", "AP_RATE_LIMIT=1000000")

	p, ids, states := killMidway(t, env, map[string]any{"model": "gpt-test", "provider_id": "openai", "temperature": 0.2}, 200, 10)
	completed := 0
	for _, id := range ids {
		st, ok := states[id]
		require.True(t, ok, "activation %s is missing", id)
		switch st.Status {
		case "completed":
			completed++
		case "failed":
			require.NotNil(t, st.Error, "a failed activation says why")
			require.NotEmpty(t, *st.Error)
		default:
			t.Fatalf("activation %s is %s", id, st.Status)
		}
	}
	require.Equal(t, 200, completed, "the killed worker's activations ran again (at-least-once), none failed")
	// The answers the kill lost were asked for again: the provider
	// answered more often than the ledger has records, which are exactly
	// the recorded answers' usage.
	sum := checkLedger(t, openLedger(t, env), p, ids)
	t.Logf("LLM calls answered: %d for 200 activations; the ledger's tokens: %v", slow.Calls(), sum)
}

// TestKill9LosesNoJavaScriptRun: custom agents share the lifecycle's
// recovery. JavaScript runs waiting on a slow LLM through ctx.llm.complete
// are killed with the server; after a restart every one has run again to
// completion (a new run gets a new agent key), none is stuck or missing.
func TestKill9LosesNoJavaScriptRun(t *testing.T) {
	t.Parallel()
	slow := llmtest.NewOpenAI(t)
	slow.SetDelay(300 * time.Millisecond)
	env := environ(t.TempDir(), "AP_OPENAI_BASE_URL="+slow.URL, "AP_OPENAI_API_KEY=sk-test", "AP_MAX_INFLIGHT=8", "AP_RATE_LIMIT=1000000")

	_, ids, states := killMidway(t, env, map[string]any{"runtime": "javascript", "code": `async function run(input, ctx) {
		const r = await ctx.llm.complete({prompt: input.prompt, provider_id: "openai"});
		await ctx.storage.set(input.prompt, r.text);
		return {text: r.text};
	}`}, 60, 5)
	for _, id := range ids {
		st, ok := states[id]
		require.True(t, ok, "activation %s is missing", id)
		require.Equal(t, "completed", st.Status, "activation %s: %v", id, st.Error)
	}
}

// TestSIGTERMDuringLoadDrains: SIGTERM with activations queued and running
// (AP_MAX_INFLIGHT=8), and with all of them in flight (the default bound):
// the process exits cleanly, and after a restart every activation
// completes; none is lost or failed.
func TestSIGTERMDuringLoadDrains(t *testing.T) {
	t.Parallel()
	for name, inflight := range map[string]string{"some queued": "8", "all in flight": ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slow := llmtest.NewOpenAI(t)
			slow.SetDelay(200 * time.Millisecond)
			env := environ(t.TempDir(), "AP_OPENAI_BASE_URL="+slow.URL, "AP_OPENAI_API_KEY=sk-test", "AP_MAX_INFLIGHT="+inflight,
				"AP_RATE_LIMIT=1000000")

			first := startServe(t, env)
			p := setupPlatform(t, first.URL)
			ids := p.activate(100)
			first.stop() // SIGTERM, exit 0 within the drain time

			second := startServe(t, env)
			p.base = second.URL
			states := p.awaitAllEnded(ids, time.Minute)
			for _, id := range ids {
				require.Equal(t, "completed", states[id].Status, "activation %s: %+v", id, states[id])
			}
			second.stop()
		})
	}
}

// TestKill9PipelineStepsRunOnce: pipeline runs whose function step waits on
// a slow server, the server killed with SIGKILL mid-way and restarted on
// the same data: once the restarted process has taken back the dead one's
// steps (at once on SQLite), every run completes, and each function step
// has exactly one execution, however many were interrupted or delivered
// again.
func TestKill9PipelineStepsRunOnce(t *testing.T) {
	t.Parallel()
	slow := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) //nolint:forbidigo // the slow step
		_, _ = w.Write([]byte("slow"))
	}))
	env := environ(t.TempDir(), "AP_EGRESS_ALLOW="+egresstest.Allow, "AP_RATE_LIMIT=1000000")
	first := startServe(t, env)
	p := setupPlatformWith(t, first.URL, map[string]any{"runtime": "javascript", "code": `async function run() { return {}; }`})
	var app struct {
		AppID string `json:"app_id"`
	}
	p.call("POST", "/api/v1/apps/import-manifest", p.key, map[string]any{"name": "Steps", "slug": "steps", "version": "1.0.0",
		"functions": []any{map[string]any{"name": "slow", "input_schema": map[string]any{"type": "object"}, "timeout_seconds": 30,
			"code": `async function run(input, ctx) { const r = await ctx.http.fetch("` + slow.URL + `"); return {n: input.n, body: r.body}; }`}}}, &app)
	var pipe struct {
		ID string `json:"pipeline_id"`
	}
	p.call("POST", "/api/v1/pipelines", p.key, map[string]any{"app_id": app.AppID, "name": "one",
		"steps": []any{map[string]any{"id": "a", "type": "function", "ref": "slow", "input": map[string]any{"n": "{{input.n}}"}}}}, &pipe)
	const n = 40
	for i := range n {
		p.call("POST", "/api/v1/pipelines/"+pipe.ID+"/run", p.key, map[string]any{"input": map[string]any{"n": i}}, nil)
	}
	runs := func() map[string]int {
		var list struct {
			Runs []struct {
				Status string `json:"status"`
			} `json:"runs"`
		}
		p.call("GET", "/api/v1/pipelines/runs?limit=1000&pipeline_id="+pipe.ID, p.key, nil, &list)
		out := map[string]int{}
		for _, r := range list.Runs {
			out[r.Status]++
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for runs()["completed"] < 5 {
		require.True(t, time.Now().Before(deadline), "nothing completed before the kill")
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
	first.signal(syscall.SIGKILL)
	first.wait(stopTimeout)

	second := startServe(t, env)
	t.Cleanup(second.stop)
	p.base = second.URL
	deadline = time.Now().Add(90 * time.Second)
	for runs()["completed"] < n {
		require.True(t, time.Now().Before(deadline), "runs after the restart: %v", runs())
		time.Sleep(250 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
	var history struct {
		Total int `json:"total_count"`
	}
	p.call("GET", "/api/v1/apps/"+app.AppID+"/functions/history?limit=1", p.key, nil, &history)
	require.Equal(t, n, history.Total, "one execution per function step")
}
