// Package mcptest is a remote MCP server for tests: the go-sdk's own
// server over Streamable HTTP on egresstest's address (the outside world,
// which the egress guard lets tests reach), with a few tools, counters of
// what it was asked, and switches that make it fail the ways a real
// server does (down, answering garbage).
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
)

// The tools the server offers.
const (
	// Echo answers {"echo": <its arguments>} as JSON text.
	Echo = "echo"
	// Fail answers an error result (isError) with FailText.
	Fail = "fail"
	// Slow waits its arguments' "ms" milliseconds, then answers "done".
	Slow = "slow"
	// Dotted has a name that is no valid tool name of ours.
	Dotted = "look.up"
	// FailText is what Fail answers.
	FailText = "the fail tool failed on purpose"
)

// Options configure a Server.
type Options struct {
	// Check, when set, vets every HTTP request; an error answers 401 with
	// its text (e.g. a bearer token the provider no longer honours).
	Check func(r *http.Request) error
}

// Server is the MCP server and the test's handle on it.
type Server struct {
	// URL is the MCP endpoint, http://127.0.0.2:port/mcp.
	URL string

	lists, calls, refused atomic.Int64
	down, garbage         atomic.Bool

	mu   sync.Mutex
	keys []string
}

// New starts a server; it stops when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	object := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":` + props + `}`)
	}
	srv.AddTool(&mcp.Tool{Name: Echo, Description: "Echoes its arguments", InputSchema: object(`{"text":{"type":"string"}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.saw(req)
			b, _ := json.Marshal(map[string]json.RawMessage{"echo": req.Params.Arguments})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: Fail, Description: "Always fails", InputSchema: object(`{}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.saw(req)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: FailText}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: Slow, Description: "Takes its time", InputSchema: object(`{"ms":{"type":"integer"}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.saw(req)
			var in struct{ MS int }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: Dotted, Description: "A dotted name", InputSchema: object(`{}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.saw(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				s.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if opts.Check != nil {
			if err := opts.Check(r); err != nil {
				s.refused.Add(1)
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		// The switches spare the session's start and listing: they make
		// calls fail, as a server that breaks mid-run does.
		isCall := false
		if r.Method == http.MethodPost && (s.down.Load() || s.garbage.Load()) {
			body, _ := io.ReadAll(r.Body)
			isCall = strings.Contains(string(body), `"tools/call"`)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		switch {
		case s.down.Load() && isCall:
			// A server gone mid-run: the connection drops, no answer.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		case s.garbage.Load() && isCall:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc": oops <html>` + strings.Repeat("garbage ", 64)))
			return
		}
		h.ServeHTTP(w, r)
	})
	hs := egresstest.NewServer(t, mux)
	s.URL = hs.URL + "/mcp"
	// A client whose connection broke (garbage, a server down) never
	// deletes its session: its goroutines end with the test, not later.
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return s
}

func (s *Server) saw(req *mcp.CallToolRequest) {
	s.calls.Add(1)
	key, _ := req.Params.Meta["agentplatform/idempotency_key"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, key)
}

// Lists is how many tools/list requests the server answered.
func (s *Server) Lists() int64 { return s.lists.Load() }

// Calls is how many tool calls reached a tool.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Refused is how many HTTP requests Options.Check refused.
func (s *Server) Refused() int64 { return s.refused.Load() }

// Keys are the idempotency keys of the calls, in order ("" for none).
func (s *Server) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// SetDown makes every tool call's connection drop (true) or not.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// SetGarbage makes every tool call answer malformed JSON (true) or not.
func (s *Server) SetGarbage(on bool) { s.garbage.Store(on) }
