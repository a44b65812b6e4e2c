package api_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// The MCP server and the OpenAI-compatible endpoint called by the official
// TypeScript clients (@modelcontextprotocol/sdk, openai), pinned in
// testdata/npm beside the linters and run with node: the Go SDKs the other
// tests use are not the only clients people point at the platform.

// nodeClient runs testdata/npm/<script> with node, args and AP_KEY=key, and
// decodes the JSON it prints. Without node or the packages it skips, or
// fails under AP_TEST_REQUIRE_ALL=1 (CI), as npmBin does.
func nodeClient(t *testing.T, script, pkg, key string, args ...string) map[string]any {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "npm"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	testdb.Need(t, err, pkg+" (npm ci --prefix testdata/npm)")
	node, err := exec.LookPath("node")
	testdb.Need(t, err, "node")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Env = append(os.Environ(), "AP_KEY="+key, "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "node %s printed: %s", script, out)
	return got
}

// TestMCPNodeClient: the TypeScript SDK's Streamable HTTP client lists an
// app's tools, calls the echo agent, and gets isError for a call its
// schema refuses.
func TestMCPNodeClient(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")

		for _, c := range []struct{ path, prefix string }{
			{"/api/v1/apps/" + appID + "/mcp", ""},
			{"/api/v1/mcp", "support-desk__"},
		} {
			got := nodeClient(t, "mcp-client.mjs", "@modelcontextprotocol/sdk", key,
				e.url+c.path, c.prefix+"triage", `{"prompt": "hi from node"}`, c.prefix+"triage", `{}`)

			var names []string
			for _, tl := range got["tools"].([]any) {
				tool := tl.(map[string]any)
				names = append(names, tool["name"].(string))
				require.Equal(t, "object", tool["inputSchema"].(map[string]any)["type"], tool["name"])
			}
			require.Len(t, names, 7, c.path)
			require.Contains(t, names, c.prefix+"triage")
			require.Contains(t, names, c.prefix+"normalize-ticket")

			ok := got["ok"].(map[string]any)
			require.NotEqual(t, true, ok["isError"], ok)
			content := ok["content"].([]any)[0].(map[string]any)
			require.Equal(t, "text", content["type"])
			require.Equal(t, "echo: hi from node", content["text"])

			failed := got["failed"].(map[string]any)
			require.Equal(t, true, failed["isError"], failed)
			require.Contains(t, failed["content"].([]any)[0].(map[string]any)["text"], "prompt")
		}

		acts := list(e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(key)).expect(t, 200), "activations")
		require.Len(t, acts, 2, "each successful call is an activation; the refused ones are none")
		for _, a := range acts {
			require.Equal(t, "mcp", a["context"].(map[string]any)["source"])
		}
	})
}

// TestOpenAINodeClient: the `openai` package lists the models, makes a
// chat completion, streams one with usage, and goes through a round of
// the caller's tools (finish_reason tool_calls, then the results).
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		model := e.openaiModel(token, f)
		got := nodeClient(t, "openai-client.mjs", "openai", e.keyWith(token, "read:all", "write:all"), e.url+"/api/v1/openai", model)

		require.Contains(t, got["models"], model)

		plain := got["plain"].(map[string]any)
		require.Equal(t, "chat.completion", plain["object"])
		require.Equal(t, model, plain["model"])
		choice := plain["choices"].([]any)[0].(map[string]any)
		require.Equal(t, "stop", choice["finish_reason"])
		require.Equal(t, "echo: hello from node", choice["message"].(map[string]any)["content"])
		require.Positive(t, plain["usage"].(map[string]any)["total_tokens"])

		streamed := got["streamed"].(map[string]any)
		require.Equal(t, true, streamed["done"])
		require.Equal(t, "echo: stream these words", streamed["content"])
		require.Equal(t, "stop", streamed["finish_reason"])
		require.Greater(t, streamed["chunks"], 3.0, "the role, a chunk per token, the finish, the usage")
		require.Positive(t, streamed["usage"].(map[string]any)["total_tokens"])
		require.True(t, strings.HasPrefix(streamed["id"].(string), "chatcmpl-"), streamed["id"])

		call := got["tool_call"].(map[string]any)["choices"].([]any)[0].(map[string]any)
		require.Equal(t, "tool_calls", call["finish_reason"])
		calls := call["message"].(map[string]any)["tool_calls"].([]any)
		require.Len(t, calls, 1)
		fn := calls[0].(map[string]any)["function"].(map[string]any)
		require.Equal(t, "get_weather", fn["name"])
		require.JSONEq(t, `{"city": "Paris"}`, fn["arguments"].(string))

		after := got["after_tools"].(map[string]any)["choices"].([]any)[0].(map[string]any)
		require.Equal(t, "stop", after["finish_reason"])
		require.Contains(t, after["message"].(map[string]any)["content"], "sunny")

		// Each call was an activation from the endpoint.
		acts := list(e.do("GET", "/api/v1/agents/"+f.agentID+"/activations", nil, bearer(token)).expect(t, 200), "activations")
		require.Len(t, acts, 4)
	})
}
