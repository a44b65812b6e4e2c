package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestOpenAIAnswersMatchTheDocument drives the OpenAI-compatible endpoint
// and checks every answer, errors included, against the document's
// OpenAI shapes; bad input (malformed JSON, a wrong type, an oversized
// body) is an OpenAI-shaped 4xx, never a 500.
func TestOpenAIAnswersMatchTheDocument(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		c := newContract(t, e)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		model := e.openaiModel(token, f)
		as := bearer(e.keyWith(token, "read:all", "write:all"))
		const models, chat = "/api/v1/openai/models", "/api/v1/openai/chat/completions"
		hello := []any{map[string]any{"role": "user", "content": "hello"}}

		require.Contains(t, string(c.call(200, "GET", models, nil, nil, as).Body), model)
		c.call(401, "GET", models, nil, nil)
		c.call(200, "POST", chat, nil, map[string]any{"model": model, "messages": hello}, as)
		r := c.call(200, "POST", chat, nil, map[string]any{"model": model, "messages": hello, "stream": true,
			"stream_options": map[string]any{"include_usage": true}}, as)
		require.True(t, strings.HasSuffix(string(r.Body), "data: [DONE]\n\n"), string(r.Body))
		// The caller's tool, called: content null, tool_calls.
		r = c.call(200, "POST", chat, nil, map[string]any{"model": model, "messages": []any{
			map[string]any{"role": "user", "content": `call lookup {"q": 1}`}},
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}}}, as)
		require.Contains(t, string(r.Body), `"finish_reason":"tool_calls"`)

		badInput := map[string]struct {
			body  any
			param any
		}{
			"malformed JSON":    {[]byte(`{"model": `), nil},
			"not an object":     {[]byte(`[1, 2]`), nil},
			"a wrong type":      {[]byte(`{"model": 7, "messages": []}`), "model"},
			"messages a string": {map[string]any{"model": model, "messages": "hi"}, "messages"},
			"no messages":       {map[string]any{"model": model}, "messages"},
			"a bad role":        {map[string]any{"model": model, "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, "messages[0].role"},
			"a bad temperature": {map[string]any{"model": model, "messages": hello, "temperature": 3}, "temperature"},
		}
		for name, bad := range badInput {
			r := c.call(400, "POST", chat, nil, bad.body, as)
			errBody := r.JSON["error"].(map[string]any)
			require.Equal(t, "invalid_value", errBody["code"], name)
			require.Equal(t, bad.param, errBody["param"], name)
		}
		c.call(404, "POST", chat, nil, map[string]any{"model": "nope/none", "messages": hello}, as)
		big := []byte(`{"model": "` + model + `", "messages": [{"role": "user", "content": "` + strings.Repeat("a", 1<<20) + `"}]}`)
		r = c.call(413, "POST", chat, nil, big, as)
		require.Equal(t, "payload_too_large", r.JSON["error"].(map[string]any)["code"])
		// Chunked (no length to refuse it by), in a type the router does
		// not read: the handler meets the cap.
		req, err := http.NewRequest("POST", e.url+chat, io.MultiReader(bytes.NewReader(big)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/octet-stream")
		as(req)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, string(b))
		require.Contains(t, string(b), "payload_too_large")
		c.call(403, "POST", chat, nil, map[string]any{"model": model, "messages": hello}, bearer(e.keyWith(token, "read:all")))

		// Nothing refused made an activation: the three calls answered.
		acts := list(e.do("GET", "/api/v1/agents/"+f.agentID+"/activations", nil, bearer(token)).expect(t, 200), "activations")
		require.Len(t, acts, 3)
	})
}
