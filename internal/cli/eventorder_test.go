package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestEventOrderAcrossNodes: an API node (serve --no-worker) and two
// worker processes on one PostgreSQL database, 20 users running at once,
// each watched by a WebSocket client of the API node that disconnects
// midway and resumes with ?since=<the last seq it received>. The API node
// appends activation_created; the workers append the rest, which reach
// the API node by NOTIFY. Every user receives every one of their events
// exactly once, each connection in increasing seq order, and a final
// replay from 0 is the same list. (Seqs come from transaction ids and are
// not dense: DESIGN promises increasing.)
func TestEventOrderAcrossNodes(t *testing.T) {
	t.Parallel()
	const users, runs, concurrency = 20, 12, 3
	dsn := testdb.URL(t, store.Postgres)
	env := environ(t.TempDir(), "AP_DATABASE_URL="+dsn, "AP_SECRET_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AP_RATE_LIMIT=1000000")
	api := startServe(t, env, "--no-worker") // migrates the database
	for range 2 {
		w := start(t, env, "worker")
		t.Cleanup(w.stop)
	}
	t.Cleanup(api.stop)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	echo := map[string]any{"model": "echo", "provider_id": "echo"}
	var wg sync.WaitGroup
	for u := range users {
		p := setupPlatformAs(t, api.URL, fmt.Sprintf("u%d@example.com", u), false, echo)
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchUser(ctx, t, api.URL, p, runs, concurrency)
		}()
	}
	wg.Wait()
}

// watchUser runs the user's activations while a client watches: half of
// the events on a first connection, the rest on a second that resumes
// from the first's last seq; then a replay from 0.
func watchUser(ctx context.Context, t *testing.T, base string, p *platform, runs, concurrency int) {
	dial := func(query string) *websocket.Conn {
		c, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/api/v1/ws"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + p.key}}})
		if err != nil {
			t.Error(err)
			return nil
		}
		c.SetReadLimit(1 << 20)
		return c
	}
	// read appends what c delivers until stop says so.
	read := func(c *websocket.Conn, seqs *[]int64, ended *int, stop func() bool) bool {
		for !stop() {
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Errorf("%s: after %d events: %v", p.key[:8], len(*seqs), err)
				return false
			}
			var ev struct {
				Seq  int64  `json:"seq"`
				Type string `json:"type"`
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Error(err)
				return false
			}
			*seqs = append(*seqs, ev.Seq)
			if ev.Type == "activation_completed" || ev.Type == "activation_failed" {
				*ended++
			}
		}
		return true
	}

	first := dial("")
	if first == nil {
		return
	}
	var runsWG sync.WaitGroup
	work := make(chan struct{}, runs)
	for range runs {
		work <- struct{}{}
	}
	close(work)
	for range concurrency {
		runsWG.Add(1)
		go func() {
			defer runsWG.Done()
			for range work {
				var a struct {
					ID string `json:"activation_id"`
				}
				p.call("POST", "/api/v1/agents/"+p.agent+"/activate", p.key, map[string]any{"input_data": map[string]any{"prompt": "hi"}}, &a)
			}
		}()
	}
	var before, after []int64
	ended := 0
	ok := read(first, &before, &ended, func() bool { return len(before) >= runs*3/2 })
	first.CloseNow()
	if !ok {
		return
	}
	second := dial(fmt.Sprintf("?since=%d", before[len(before)-1]))
	if second == nil {
		return
	}
	defer second.CloseNow()
	ok = read(second, &after, &ended, func() bool { return ended >= runs })
	runsWG.Wait()
	if !ok {
		return
	}
	// assert, not require: this runs on a goroutine of its own.
	assert.IsIncreasing(t, before)
	assert.IsIncreasing(t, after)
	assert.Greater(t, after[0], before[len(before)-1], "the resumed connection starts after the first's last")
	got := append(before, after...)

	// A replay from 0 on a new connection: the same events, in order.
	replay := dial("?since=0")
	if replay == nil {
		return
	}
	defer replay.CloseNow()
	var all []int64
	n := 0
	if !read(replay, &all, &n, func() bool { return len(all) >= len(got) }) {
		return
	}
	assert.Equal(t, all, got, "every event exactly once, in seq order")
	assert.Equal(t, runs, n)
}
