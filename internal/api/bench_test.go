package api_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/agentplatform/agentplatform/internal/testdb"
)

// BenchmarkGetMeWithAPIKey is the hot authenticated read end to end: HTTP,
// key lookup by hash, scope check, rate limit, one user read, JSON out.
func BenchmarkGetMeWithAPIKey(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
			key := e.keyWith(e.signup("bench@example.com"), "read:all")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", e.url+"/api/v1/users/me", nil)
					req.Header.Set("Authorization", "Bearer "+key)
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != 200 {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
		})
	}
}
