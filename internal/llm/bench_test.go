package llm_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// BenchmarkResolve measures what every activation pays to find its provider:
// one read by key, the built client reused.
func BenchmarkResolve(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			if d == store.Postgres {
				testdb.RequirePostgres(b)
			}
			bd := setup(b, d, llm.Options{})
			alice := bd.user(b)
			p, err := bd.svc.Create(context.Background(), alice, llm.Input{Name: ptr("o"), Type: ptr(llm.TypeOpenAICompatible),
				BaseURL: ptr("http://127.0.0.1:1/v1"), APIKey: ptr("k"), IsDefault: ptr(true)})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct{ name, id string }{{"own", p.ID}, {"default", ""}, {"system", "echo"}} {
				b.Run(c.name, func(b *testing.B) {
					ctx := context.Background()
					b.ReportAllocs()
					for b.Loop() {
						if _, err := bd.svc.Resolve(ctx, alice.UserID, c.id); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkOpenAIStream is one streamed completion on the openai provider,
// as the yardstick's fake LLM answers it: a role chunk, the text, the
// finish and the usage chunk. Most of its cost is the SDK's request and
// the reading of the chunks.
func BenchmarkOpenAIStream(b *testing.B) {
	const chunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`
	body := "data: " + fmt.Sprintf(chunk, `{"role":"assistant","content":""}`, "null") + "\n\n" +
		"data: " + fmt.Sprintf(chunk, `{"content":"echo: My invoice is wrong"}`, "null") + "\n\n" +
		"data: " + fmt.Sprintf(chunk, `{}`, `"stop"`) + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{ID: "openai", Type: llm.TypeOpenAI, BaseURL: srv.URL, APIKey: "sk-test"})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Model: "gpt-4o-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: "My invoice is wrong"}},
		OnDelta: func(string) {}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Complete(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if res.Text != "echo: My invoice is wrong" || res.Usage.TotalTokens != 18 || res.FinishReason != "stop" {
			b.Fatalf("%+v", res)
		}
	}
}
