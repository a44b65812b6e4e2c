package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSDKCall is the SDK's own cost of a stateless tools/call
// answered in JSON, around a tool that answers at once.
func BenchmarkSDKCall(b *testing.B) {
	srv := newServer()
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return answer([]byte(`{"response":"echo: My invoice is wrong"}`), "echo: My invoice is wrong"), nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, DisableLocalhostProtection: true, MaxRequestBodyBytes: -1, PropagateRequestCancellation: true,
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"prompt":"My invoice is wrong"}}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
