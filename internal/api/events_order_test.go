package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestSocketOrderUnderLoad: 300 activations at concurrency 32, watched by a
// client that disconnects halfway and resumes with ?since=<last seq
// received>. Each connection receives its events in seq order, and the two
// together receive every event of the user exactly once. (Seqs are dense on
// SQLite only: DESIGN promises increasing ones.) On PostgreSQL the
// client is on a second node, so the events come both from that node's own
// runs and, through NOTIFY, from the first node's.
func TestSocketOrderUnderLoad(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		const activations, concurrency = 300, 32
		dsn := testdb.URL(t, d)
		// The rate limit is not under test: the load alone would spend it.
		vars := map[string]string{"AP_DATABASE_URL": dsn, "AP_MAX_INFLIGHT": "16", "AP_RATE_LIMIT": "1000000000"}
		e := newEnv(t, d, vars)
		watch := e
		if d == store.Postgres {
			watch = newEnv(t, d, vars)
		}
		token := e.signup("u@example.com")
		key := e.keyWith(token, "write:all")
		f := e.llmAgent(token, nil, 0)

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		dial := func(query string) *websocket.Conn {
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(watch.url, "http")+"/api/v1/ws"+query,
				&websocket.DialOptions{HTTPHeader: authHeader(key)})
			require.NoError(t, err)
			c.SetReadLimit(1 << 20)
			return c
		}
		// read appends what *c delivers until stop says so; it returns the
		// seqs in arrival order. A connection the server drops as too slow
		// (a burst larger than its buffer while the machine is starved, as
		// under a loaded CI run with -race) is resumed as clients are told
		// to: ?since=<last seq received>, so the order and exactly-once
		// checks below still see one stream.
		resumes := 0
		read := func(c **websocket.Conn, stop func(n int, ended int) bool, seqs *[]int64, ended *int) {
			for !stop(len(*seqs), *ended) {
				_, data, err := (*c).Read(ctx)
				if websocket.CloseStatus(err) == events.CloseSlow && len(*seqs) > 0 && resumes < 3 {
					resumes++
					t.Logf("dropped as too slow after %d events: resuming", len(*seqs))
					(*c).CloseNow()
					*c = dial("?since=" + itoa((*seqs)[len(*seqs)-1]))
					continue
				}
				require.NoError(t, err, "after %d events", len(*seqs))
				var ev struct {
					Seq  int64  `json:"seq"`
					Type string `json:"type"`
				}
				require.NoError(t, json.Unmarshal(data, &ev))
				*seqs = append(*seqs, ev.Seq)
				if ev.Type == "activation_completed" || ev.Type == "activation_failed" {
					*ended++
				}
			}
		}

		first := dial("")
		var wg sync.WaitGroup
		work := make(chan struct{})
		for range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{}
				for range work {
					req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/api/v1/agents/"+f.agentID+"/activate",
						strings.NewReader(`{"input_data":{"prompt":"hello"}}`))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					res, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 201 {
						t.Errorf("activate: %d %s", res.StatusCode, b)
						return
					}
				}
			}()
		}
		go func() {
			defer close(work)
			for range activations {
				select {
				case work <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}()

		var before, after []int64
		ended := 0
		read(&first, func(n, _ int) bool { return n >= activations*3/2 }, &before, &ended)
		first.CloseNow()
		second := dial("?since=" + itoa(before[len(before)-1]))
		read(&second, func(_, e int) bool { return e >= activations }, &after, &ended)
		wg.Wait()

		// Each connection in increasing seq order, the second from just
		// after the first's last; together exactly the stored events, which
		// are final once every run has ended (on PostgreSQL, once every
		// older transaction of the cluster has).
		require.IsIncreasing(t, before)
		require.IsIncreasing(t, after)
		require.Greater(t, after[0], before[len(before)-1])
		user := e.do("GET", "/api/v1/users/me", nil, bearer(token)).str("id")
		var stored []int64
		require.Eventually(t, func() bool {
			rows, err := e.srv.Store.EventListAfter(context.Background(), user, 0, 2*activations*3)
			require.NoError(t, err)
			stored = stored[:0]
			for _, r := range rows {
				stored = append(stored, r.Seq)
			}
			return len(stored) >= activations*3
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, stored, append(before, after...), "every stored event received once, in order")
		if d == store.SQLite {
			// Dense there: the user's counter.
			require.EqualValues(t, 1, before[0])
			require.EqualValues(t, activations*3, after[len(after)-1])
		}
		second.CloseNow()
	})
}
