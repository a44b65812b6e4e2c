package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// wsEnv serves one user's socket straight from a Bus, with test-sized
// options; the API's own route is tested in package api.
type wsEnv struct {
	s    *store.Store
	bus  *events.Bus
	user string
	url  string
}

func newWSEnv(t *testing.T, opts events.WSOptions) *wsEnv {
	t.Helper()
	s := testdb.Open(t, store.SQLite)
	e := &wsEnv{s: s, bus: events.New(s, testdb.Logger())}
	e.user = newUser(t, s)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		since := int64(-1)
		if v := q.Get("since"); v != "" {
			since, _ = strconv.ParseInt(v, 10, 64)
		}
		e.bus.ServeWS(w, r, events.WSRequest{UserID: e.user, Since: since, AppID: q.Get("bound"),
			Filter: events.Filter{AppID: q.Get("app_id"), ChatID: q.Get("chat_id")}}, opts)
	}))
	t.Cleanup(func() { e.bus.Stop(); hs.Close() })
	e.url = "ws" + strings.TrimPrefix(hs.URL, "http")
	return e
}

func (e *wsEnv) dial(t *testing.T, query string, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.url+"/?"+query, opts)
	require.NoError(t, err)
	c.SetReadLimit(1 << 24)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// next reads one message into v.
func next(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s", data)
}

func nextEvent(t *testing.T, c *websocket.Conn) events.Event {
	t.Helper()
	var ev events.Event
	next(t, c, &ev)
	return ev
}

func send(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, c.Write(context.Background(), websocket.MessageText, data))
}

// TestSocketReplayThenLive: replay and live join without a gap or a
// duplicate, including an event committed before the connection but
// published after its replay read it.
func TestSocketReplayThenLive(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t, events.WSOptions{})
	ctx := context.Background()
	for range 3 {
		appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a", "c"))
	}
	late := event(e.user, events.ActivationCompleted, "a", "c")
	require.NoError(t, e.s.InTx(ctx, func(tx *store.Store) error { return e.bus.Append(ctx, tx, &late) }))

	c := e.dial(t, "since=1", nil)
	for want := int64(2); want <= 4; want++ {
		require.Equal(t, want, nextEvent(t, c).Seq)
	}
	e.bus.Publish(ctx, late) // already replayed: not sent again
	fifth := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationFailed, "a", "c"))
	got := nextEvent(t, c)
	require.Equal(t, fifth.Seq, got.Seq)
	require.Equal(t, events.ActivationFailed, got.Type)
	require.Equal(t, fifth.ActivationID, got.ActivationID)

	// Without since, only live events.
	c2 := e.dial(t, "", nil)
	sixth := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a", "c"))
	require.Equal(t, sixth.Seq, nextEvent(t, c2).Seq)
}

func TestSocketFilters(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t, events.WSOptions{})
	c := e.dial(t, "app_id=a1", nil)
	appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a2", "c1"))
	e1 := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a1", "c1"))
	require.Equal(t, e1.Seq, nextEvent(t, c).Seq, "the a2 event was filtered out")

	// A subscribe message replaces the filter; the answer confirms it.
	send(t, c, map[string]any{"type": "subscribe", "chat_id": "c9"})
	var ack events.ServerMessage
	next(t, c, &ack)
	require.Equal(t, "subscribed", ack.Type)
	require.Equal(t, "c9", ack.ChatID)
	require.Empty(t, ack.AppID)
	appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a1", "c1"))
	e2 := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a2", "c9"))
	require.Equal(t, e2.Seq, nextEvent(t, c).Seq)

	send(t, c, map[string]any{"type": "bogus"})
	var bad events.ServerMessage
	next(t, c, &bad)
	require.Equal(t, "error", bad.Type)
	require.Contains(t, bad.Error, "subscribe")
	require.NoError(t, c.Write(context.Background(), websocket.MessageText, []byte("{not json")))
	next(t, c, &bad)
	require.Contains(t, bad.Error, "malformed JSON")

	// A connection bound to an app cannot subscribe its way out.
	bound := e.dial(t, "bound=a1", nil)
	send(t, bound, map[string]any{"type": "subscribe", "app_id": "a2"})
	next(t, bound, &ack)
	appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a2", ""))
	send(t, bound, map[string]any{"type": "subscribe"})
	next(t, bound, &ack)
	e3 := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "a1", ""))
	require.Equal(t, e3.Seq, nextEvent(t, bound).Seq, "the a2 event never reached the bound connection")
}

// TestSlowClientIsDisconnected: a client that stops reading is closed with
// 1008 once its buffer fills, while another client of the same user gets
// every event in time and the publisher never waits.
func TestSlowClientIsDisconnected(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t, events.WSOptions{Buffer: 8, WriteTimeout: time.Second})
	slow := e.dial(t, "", nil)
	fast := e.dial(t, "", nil)
	// Both sockets are subscribed once each has received a first event.
	first := appendCommit(t, e.bus, e.s, event(e.user, events.ActivationCompleted, "", ""))
	require.Equal(t, first.Seq, nextEvent(t, slow).Seq)
	require.Equal(t, first.Seq, nextEvent(t, fast).Seq)

	big := json.RawMessage(`{"response":"` + strings.Repeat("x", 256<<10) + `"}`)
	const n = 100 // 25 MiB: more than socket buffers hold
	for i := range n {
		ev := event(e.user, events.ActivationCompleted, "", "")
		ev.Seq, ev.OutputData = int64(1000+i), big
		start := time.Now()
		e.bus.Publish(context.Background(), ev)
		require.Less(t, time.Since(start), time.Second, "Publish waited for a client")
		require.Equal(t, ev.Seq, nextEvent(t, fast).Seq)
	}
	// The slow client finds some events, then the close.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	var err error
	for {
		if _, _, err = slow.Read(ctx); err != nil {
			break
		}
		got++
	}
	require.Less(t, got, n)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the server closed the connection")
	// A close frame can only get through if the socket was not stuck.
	if status := websocket.CloseStatus(err); status != -1 {
		require.Equal(t, events.CloseSlow, status)
	}
}

func TestSocketPingsAndShutdown(t *testing.T) {
	t.Parallel()
	// The interval is also the pong's deadline: 20 ms was missed in a
	// loaded full -race run, and the server rightly hung up.
	e := newWSEnv(t, events.WSOptions{PingInterval: 250 * time.Millisecond})
	var pings atomic.Int32
	c := e.dial(t, "", &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
		pings.Add(1)
		return true
	}})
	readErr := make(chan error, 1)
	go func() {
		_, _, err := c.Read(context.Background())
		readErr <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for pings.Load() < 3 {
		require.True(t, time.Now().Before(deadline), "no pings")
		time.Sleep(5 * time.Millisecond) //nolint:forbidigo // polling a counter with a deadline
	}
	e.bus.Stop()
	err := <-readErr
	require.Equal(t, events.CloseShutdown, websocket.CloseStatus(err), "err: %v", err)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}
