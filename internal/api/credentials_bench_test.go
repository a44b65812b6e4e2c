package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// latencies collects request durations from concurrent goroutines.
type latencies struct {
	mu   sync.Mutex
	took []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.took = append(l.took, d)
	l.mu.Unlock()
}

// quantile is the q-th quantile (0 < q < 1) of what was collected.
func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.took) == 0 {
		return 0
	}
	s := slices.Clone(l.took)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

func (l *latencies) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.took)
}

// report adds the p50 and p99 of l to b's figures, with a prefix.
func (l *latencies) report(b *testing.B, prefix string) {
	b.ReportMetric(ms(l.quantile(0.50)), prefix+"p50-ms")
	b.ReportMetric(ms(l.quantile(0.99)), prefix+"p99-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// getOK GETs url with key and times it; anything but a 200 is an error.
func getOK(client *http.Client, url, key string) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: status %d", url, res.StatusCode)
	}
	return time.Since(start), nil
}

// connected connects alice's account (fresh tokens for an hour) and
// answers an app:access key that reads its tokens, and the URL of its
// get_credentials.
func (fx crmApp) connected() (key, url string) {
	fx.e.connect(fx.alice, fx.appID, fx.p, "alice", "/").expect(fx.e.t, 303)
	return fx.e.keyWith(fx.alice, "app:access"), fx.e.url + fx.base
}

// BenchmarkGetCredentials is get_credentials of a fresh token over HTTP,
// as an agent calls it before each use of a third-party API: key lookup,
// the authenticator and connection in one read, the access and refresh
// tokens opened (AES-GCM), JSON out. 8 in flight.
func BenchmarkGetCredentials(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			key, url := newCRMApp(b, d, oauthtest.Options{}, map[string]string{"AP_RATE_LIMIT": "1000000000"}).connected()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			var l latencies
			b.ReportAllocs()
			b.SetParallelism(benchParallelism(4)) // default 8 in flight on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					took, err := getOK(client, url, key)
					if err != nil {
						b.Error(err)
						return
					}
					l.add(took)
				}
			})
			b.StopTimer()
			l.report(b, "")
		})
	}
}

// BenchmarkRefresherKeepsUp is the background refresher's worst day: a
// fleet of connections (AP_BENCH_CONNECTIONS, default 10,000) whose
// tokens all expire within the same five minutes, so every one is due at
// once, refreshed against a real provider (fosite, one client secret
// check per refresh). It measures how fast the fleet is renewed, checks
// that no token reached its expiry unrefreshed, and measures the API
// meanwhile: the p99 of get_credentials (4 in flight) before the storm
// ("idle-") and during it ("storm-"). It runs the scenario once, whatever
// b.N:
//
//	go test ./internal/api -run '^$' -bench RefresherKeepsUp -benchtime 1x -timeout 30m
//
// The connections are seeded straight into the store, with real grants
// the provider issued (oauthtest.Grant): 10,000 browser flows through the
// platform would measure the callback, which other tests cover.
func BenchmarkRefresherKeepsUp(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("AP_BENCH_CONNECTIONS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			fx := newCRMApp(b, d, oauthtest.Options{}, map[string]string{"AP_RATE_LIMIT": "1000000000", "AP_CREDENTIAL_SCAN_INTERVAL": "1s"})
			p, e, session := fx.p, fx.e, fx.alice
			key, url := fx.connected()
			st := e.srv.Store
			me := e.do("GET", "/api/v1/users/me", nil, bearer(session)).expect(b, 200).str("id")

			// The fleet: apps of 100 authenticators each, copies of the
			// probe's (same client at the provider), one connection each.
			probeAuth := list(e.do("GET", "/api/v1/oauth/authenticators?app_id="+fx.appID, nil, bearer(session)).expect(b, 200), "authenticators")[0]
			tmpl, err := st.AuthenticatorGet(ctx, probeAuth["id"].(string))
			require.NoError(b, err)
			type member struct {
				conn   store.Connection
				expiry time.Time // as seeded: the deadline of its refresh
			}
			fleet := make([]member, n)
			var appID string
			for i := range fleet {
				if i%100 == 0 {
					appID = e.newApp(session, fmt.Sprintf("fleet-%d", i/100))
				}
				a := *tmpl
				a.ID, a.AppID, a.Name = uuid.NewString(), appID, fmt.Sprintf("svc-%d", i%100)
				require.NoError(b, st.AuthenticatorCreate(ctx, &a))
				fleet[i].conn = store.Connection{ID: uuid.NewString(), UserID: me, AppID: appID, AuthenticatorID: a.ID,
					Status: store.ConnConnected, TokenType: "Bearer", Scopes: []string{"read", "write"}}
			}
			grantStart := time.Now()
			grantClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
			defer grantClient.CloseIdleConnections()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
						tok, err := p.Grant(ctx, grantClient, oauthClientID, oauthClientSecret, tmpl.RedirectURI,
							"u"+strconv.Itoa(i), []string{"read", "write"})
						if err != nil {
							b.Error(err)
							return
						}
						c := &fleet[i].conn
						if c.AccessTokenEnc, err = e.srv.Secrets.Seal(tok.AccessToken); err == nil {
							c.RefreshTokenEnc, err = e.srv.Secrets.Seal(tok.RefreshToken)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if b.Failed() {
				return
			}
			b.Logf("%d grants at the provider in %s", n, time.Since(grantStart).Round(time.Millisecond))

			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			defer client.CloseIdleConnections()
			load := func(l *latencies, stop <-chan struct{}) {
				var wg sync.WaitGroup
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							took, err := getOK(client, url, key)
							if err != nil {
								b.Error(err)
								return
							}
							l.add(took)
						}
					}()
				}
				wg.Wait()
			}
			var idle latencies
			stop := make(chan struct{})
			time.AfterFunc(5*time.Second, func() { close(stop) })
			load(&idle, stop)

			// The storm: every token expires between 1 and 5 minutes
			// from now, so every one is within the refresher's 5 minutes.
			b.ResetTimer()
			t0 := store.Now()
			for i := range fleet {
				m := &fleet[i]
				m.expiry = t0.Add(time.Minute + time.Duration(i)*4*time.Minute/time.Duration(n))
				issued, due := m.expiry.Add(-time.Hour), m.expiry.Add(-5*time.Minute)
				m.conn.ExpiresAt, m.conn.IssuedAt, m.conn.NextRefreshAt = &m.expiry, &issued, &due
				m.conn.ConnectedAt, m.conn.UpdatedAt = issued, issued
				require.NoError(b, st.ConnectionSave(ctx, &m.conn))
			}
			var storm latencies
			stop = make(chan struct{})
			probing := make(chan struct{})
			go func() { load(&storm, stop); close(probing) }()
			deadline := time.Now().Add(10 * time.Minute)
			for {
				var refreshed int
				require.NoError(b, st.DB().QueryRow(`SELECT count(*) FROM connections WHERE version > 1`).Scan(&refreshed))
				if refreshed >= n && p.Refreshes() >= int64(n) {
					break
				}
				if time.Now().After(deadline) {
					close(stop)
					<-probing
					b.Fatalf("after 10 minutes %d of %d connections are refreshed", refreshed, n)
				}
				time.Sleep(100 * time.Millisecond)
			}
			took := time.Since(t0)
			close(stop)
			<-probing
			b.StopTimer()

			// None expired unrefreshed, none failed, one refresh each.
			slack := time.Duration(1<<63 - 1)
			for i := range fleet {
				c, err := st.ConnectionGet(ctx, fleet[i].conn.ID)
				require.NoError(b, err)
				require.Equal(b, store.ConnConnected, c.Status, c.LastError)
				require.NotNil(b, c.LastRefreshed)
				slack = min(slack, fleet[i].expiry.Sub(*c.LastRefreshed))
			}
			require.Positive(b, slack, "a token reached its expiry before its refresh")
			require.EqualValues(b, n, p.Refreshes(), "one refresh per connection")

			b.ReportMetric(float64(n)/took.Seconds(), "refreshes/s")
			b.ReportMetric(took.Seconds(), "s-to-all")
			b.ReportMetric(slack.Seconds(), "min-slack-s")
			idle.report(b, "idle-")
			storm.report(b, "storm-")
			b.ReportMetric(float64(storm.quantile(0.99))/float64(idle.quantile(0.99)), "p99-ratio")
			b.Logf("%d connections refreshed in %s (%.0f/s), closest to expiry by %s; get_credentials p99 idle %s (%d calls), during %s (%d calls)",
				n, took.Round(time.Millisecond), float64(n)/took.Seconds(), slack.Round(time.Millisecond),
				idle.quantile(0.99), idle.len(), storm.quantile(0.99), storm.len())
		})
	}
}

// benchParallelism is AP_BENCH_PARALLELISM, or def: goroutines per CPU of
// a parallel benchmark.
func benchParallelism(def int) int {
	if v, err := strconv.Atoi(os.Getenv("AP_BENCH_PARALLELISM")); err == nil && v > 0 {
		return v
	}
	return def
}
