package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// slowCall is how long the fake LLM takes over the prompt "slow": an
// agent call far longer than any one request of the API.
const slowCall = 20 * time.Second

// TestMCPStateless proves the MCP server stateless (DESIGN §4 "MCP
// server"): two `serve` processes on one PostgreSQL database, and one
// go-sdk client session whose HTTP requests go to the nodes in turn, with
// no affinity.
//
//   - a tools/list answered by one node and a tools/call by the other: the
//     echo agent's answer comes back;
//   - a 20 s agent call completes, its progress notification reaching the
//     client: nothing on the server's side cuts a long call;
//   - the node serving a call killed with SIGKILL while the LLM answers:
//     the client's call fails, but the activation is taken over by the
//     other node's worker once the dead one is noticed (30 s silent),
//     completes, and is visible through the other node's API with
//     context.source "mcp".
//
// The first two share one pair of nodes; the kill gets a pair of its own.
func TestMCPStateless(t *testing.T) {
	t.Parallel()
	w := newMCPWorld(t)
	t.Run("spread", func(t *testing.T) {
		t.Parallel()
		c := startMCPCluster(t, w)
		t.Run("list on one node, call on the other", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			mc := c.connect(ctx, t)
			tools, err := mc.session.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			require.ElementsMatch(t, []string{"echo", "assistant"}, names)
			res, err := mc.call(ctx, "echo", "across nodes")
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
			require.Equal(t, "echo: across nodes", resultText(t, res))

			// The go-sdk's client of revision 2026-07-28 opens with
			// server/discover (no initialize, no session id).
			discover, list, call := mc.servedBy("server/discover"), mc.servedBy("tools/list"), mc.servedBy("tools/call")
			require.Len(t, discover, 1)
			require.Len(t, list, 1)
			require.Len(t, call, 1)
			require.NotEqual(t, discover[0], list[0], "server/discover and tools/list on different nodes")
			require.NotEqual(t, list[0], call[0], "tools/list and tools/call on different nodes")
			mc.requireBothServed(t)
			// The run, read on the node that did not serve the call.
			c.requireMCPRun(t, mc.activationID(t), c.nodes[list[0]], "echo: across nodes")
		})
		t.Run("a 20 s call completes", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			mc := c.connect(ctx, t)
			began := time.Now()
			res, err := mc.call(ctx, "assistant", "slow")
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
			require.Equal(t, "slow answer", resultText(t, res))
			require.GreaterOrEqual(t, time.Since(began), slowCall)
			mc.requireBothServed(t)
			// The activation's id came as progress while the call ran.
			id := mc.activationID(t)
			require.Less(t, mc.firstProgress.Sub(began), slowCall/2, "progress came at once, not with the answer")
			call := mc.servedBy("tools/call")
			require.Len(t, call, 1)
			c.requireMCPRun(t, id, c.nodes[1-call[0]], "slow answer")
		})
	})
	t.Run("kill -9 of the node serving a call", func(t *testing.T) {
		t.Parallel()
		c := startMCPCluster(t, w)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		mc := c.connect(ctx, t)
		_, err := mc.session.ListTools(ctx, nil)
		require.NoError(t, err)
		type outcome struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := mc.call(ctx, "assistant", "kill")
			done <- outcome{res, err}
		}()
		select {
		case <-w.held:
		case o := <-done:
			t.Fatalf("the call ended before the LLM was asked: %+v %v", o.res, o.err)
		case <-ctx.Done():
			t.Fatal("the LLM was not asked")
		}
		call := mc.servedBy("tools/call")
		require.Len(t, call, 1)
		victim, survivor := c.nodes[call[0]], c.nodes[1-call[0]]
		id := mc.activationID(t)
		require.Equal(t, "running", c.at(survivor).toolRun(id).Status, "the other node sees the run")
		killed := time.Now()
		victim.signal(syscall.SIGKILL)
		victim.wait(stopTimeout)
		w.release()

		o := <-done
		require.Error(t, o.err, "the call dies with its node: %+v", o.res)
		t.Logf("the client's call: %v", o.err)
		st := c.awaitEnded(t, survivor, id, 2*time.Minute)
		t.Logf("taken over and completed %s after the kill", time.Since(killed).Round(time.Second))
		require.Equal(t, "completed", st, "the run goes on without its node")
		c.requireMCPRun(t, id, survivor, "reply to: kill")
		require.Equal(t, 2, w.asked("kill"), "the killed node's LLM request, then the survivor's")
	})
}

// mcpWorld is the fake LLM of the clusters: it answers "slow" after
// slowCall, holds "kill" until the test has killed the node asking (or
// releases it), and answers anything else at once.
type mcpWorld struct {
	llm  *llmtest.Server
	held chan struct{} // closed when "kill" is first asked

	mu       sync.Mutex
	once     sync.Once
	released chan struct{}
	prompts  map[string]int
}

func newMCPWorld(t *testing.T) *mcpWorld {
	w := &mcpWorld{llm: llmtest.NewOpenAI(t), held: make(chan struct{}), released: make(chan struct{}), prompts: map[string]int{}}
	w.llm.SetScript(w.answer)
	t.Cleanup(w.release)
	return w
}

func (w *mcpWorld) answer(ctx context.Context, rec llmtest.Recorded) (llmtest.Reply, bool) {
	prompt := ""
	for _, m := range rec.Messages {
		if m.Role == llm.RoleUser {
			prompt = m.Content
		}
	}
	w.mu.Lock()
	w.prompts[prompt]++
	w.mu.Unlock()
	switch prompt {
	case "slow":
		select {
		case <-time.After(slowCall):
			return llmtest.Reply{Text: "slow answer"}, true
		case <-ctx.Done():
			return llmtest.Reply{}, false
		}
	case "kill":
		w.once.Do(func() { close(w.held) })
		select {
		case <-w.released:
		case <-ctx.Done(): // its node is gone
		}
	}
	return llmtest.Reply{}, false // the default: "reply to: <prompt>"
}

func (w *mcpWorld) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.released:
	default:
		close(w.released)
	}
}

// asked is how often the LLM was asked prompt.
func (w *mcpWorld) asked(prompt string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prompts[prompt]
}

// mcpCluster is two serve processes on one PostgreSQL database, a user
// with an admin key, and an app with two agents: echo (the echo
// provider) and assistant (the fake LLM).
type mcpCluster struct {
	nodes []*proc
	p     *platform
	app   string
}

func startMCPCluster(t *testing.T, w *mcpWorld) *mcpCluster {
	dsn := testdb.URL(t, store.Postgres)
	c := &mcpCluster{}
	for range 2 {
		// One after the other: the first migrates the database.
		env := environ(t.TempDir(), "AP_DATABASE_URL="+dsn, "AP_SECRET_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
			"AP_RATE_LIMIT=1000000", "AP_OPENAI_BASE_URL="+w.llm.URL, "AP_OPENAI_API_KEY=sk-test")
		n := startServe(t, env)
		require.Equal(t, "worker: running", n.Banner[2])
		t.Cleanup(func() {
			select {
			case <-n.done: // killed by the test
			default:
				n.stop()
			}
		})
		c.nodes = append(c.nodes, n)
	}
	c.p = setupEchoPlatform(t, c.nodes[0].URL)
	var app struct {
		AppID string `json:"app_id"`
	}
	c.p.call("POST", "/api/v1/apps/import-manifest", c.p.key, map[string]any{"name": "MCP", "slug": "mcp", "version": "1.0.0",
		"agents": []any{
			map[string]any{"name": "echo", "agent_type_id": "llm", "version": "1.0.0",
				"agent_config": map[string]any{"model": "echo", "provider_id": "echo"}},
			map[string]any{"name": "assistant", "agent_type_id": "llm", "version": "1.0.0",
				"agent_config": map[string]any{"model": "gpt-test", "provider_id": "openai"}},
		}}, &app)
	c.app = app.AppID
	return c
}

// at is the cluster's platform client pointed at node n.
func (c *mcpCluster) at(n *proc) *platform {
	p := *c.p
	p.base = n.URL
	return &p
}

// requireMCPRun checks, through node n's API, that activation id
// completed with response and was started over MCP.
func (c *mcpCluster) requireMCPRun(t *testing.T, id string, n *proc, response string) {
	t.Helper()
	p := c.at(n)
	p.t = t
	run := p.toolRun(id)
	require.Equal(t, "completed", run.Status, "%v", run.Error)
	var ctx struct {
		Source string `json:"source"`
	}
	require.NoError(t, json.Unmarshal(run.Context, &ctx))
	require.Equal(t, "mcp", ctx.Source)
	var out struct {
		Response string `json:"response"`
	}
	require.NoError(t, json.Unmarshal(run.Output, &out))
	require.Equal(t, response, out.Response)
}

// awaitEnded polls activation id on node n until it has ended and returns
// its status.
func (c *mcpCluster) awaitEnded(t *testing.T, n *proc, id string, within time.Duration) string {
	p := c.at(n)
	p.t = t
	return p.awaitAllEnded([]string{id}, within)[id].Status
}

// mcpClient is one go-sdk client session spread over the nodes: its
// RoundTrip sends each HTTP request to the next node in turn, with the
// Bearer key, and records which node served which JSON-RPC method.
type mcpClient struct {
	nodes     []*url.URL
	key       string
	transport *http.Transport
	session   *mcp.ClientSession

	mu       sync.Mutex
	next     int
	served   map[string][]int // JSON-RPC method → the node of each request
	perNode  []int
	progress []string // the progress notifications' messages
	// firstProgress is when the first notification came.
	firstProgress time.Time
}

// connect opens a session on the app's endpoint, its requests in turn to
// every node.
func (c *mcpCluster) connect(ctx context.Context, t *testing.T) *mcpClient {
	mc := &mcpClient{key: c.p.key, transport: &http.Transport{}, served: map[string][]int{}, perNode: make([]int, len(c.nodes))}
	for _, n := range c.nodes {
		u, err := url.Parse(n.URL)
		require.NoError(t, err)
		mc.nodes = append(mc.nodes, u)
	}
	t.Cleanup(mc.transport.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mc.mu.Lock()
			defer mc.mu.Unlock()
			if len(mc.progress) == 0 {
				mc.firstProgress = time.Now()
			}
			mc.progress = append(mc.progress, r.Params.Message)
		}})
	// The endpoint names the first node; RoundTrip picks the node.
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.nodes[0].URL + "/api/v1/apps/" + c.app + "/mcp",
		HTTPClient: &http.Client{Transport: mc}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	mc.session = session
	return mc
}

func (mc *mcpClient) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	mc.mu.Lock()
	i := mc.next % len(mc.nodes)
	mc.next++
	mc.served[msg.Method] = append(mc.served[msg.Method], i)
	mc.perNode[i]++
	mc.mu.Unlock()

	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host = mc.nodes[i].Scheme, mc.nodes[i].Host, ""
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Set("Authorization", "Bearer "+mc.key)
	return mc.transport.RoundTrip(out)
}

// call calls an LLM agent's tool with prompt, asking for progress.
func (mc *mcpClient) call(ctx context.Context, tool, prompt string) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"prompt": prompt}}
	params.SetProgressToken("p")
	return mc.session.CallTool(ctx, params)
}

// servedBy is the node of each request of method so far.
func (mc *mcpClient) servedBy(method string) []int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return append([]int(nil), mc.served[method]...)
}

// requireBothServed checks that every node served some of the session.
func (mc *mcpClient) requireBothServed(t *testing.T) {
	t.Helper()
	mc.mu.Lock()
	defer mc.mu.Unlock()
	for i, n := range mc.perNode {
		require.Positive(t, n, "node %d served none of the session's requests: %v", i, mc.served)
	}
	t.Logf("requests per node: %v, by method: %v", mc.perNode, mc.served)
}

// resultText is the text of a call's answer.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%T", res.Content[0])
	return text.Text
}

// activationID waits for the call's first progress notification,
// "Activation <id> <status>", and returns the id.
func (mc *mcpClient) activationID(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mc.mu.Lock()
		progress := append([]string(nil), mc.progress...)
		mc.mu.Unlock()
		if len(progress) > 0 {
			f := strings.Fields(progress[0])
			require.Len(t, f, 3, "progress %q", progress[0])
			require.Equal(t, "Activation", f[0])
			return f[1]
		}
		require.True(t, time.Now().Before(deadline), "no progress notification")
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
}
