package llm_test

import (
	"context"
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
