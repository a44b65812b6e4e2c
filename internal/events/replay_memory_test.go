package events_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestReplayToAClientThatNeverReads: a since=0 replay of large events to
// a client that reads nothing holds one batch of the store's page budget
// (here 256 KiB) while its writes are stuck, not the user's history (here
// 20 MB). Not parallel: it measures the process's heap, which other tests
// running meanwhile would disturb.
func TestReplayToAClientThatNeverReads(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			s := testdb.Open(t, d)
			s.SetPageBytes(256 << 10)
			bus := events.New(s, testdb.Logger())
			t.Cleanup(bus.Stop)
			user := newUser(t, s)
			ctx := context.Background()
			output, _ := json.Marshal(strings.Repeat("x", 500<<10))
			var last int64
			for range 40 {
				ev := event(user, events.ActivationCompleted, "app1", "")
				ev.OutputData = output
				require.NoError(t, bus.Append(ctx, nil, &ev))
				last = ev.Seq
			}
			// History, not live: on PostgreSQL events are the replay's once
			// final, when every older transaction of the cluster (another
			// test's) has ended; before that they would come live, through
			// the subscriber's buffer.
			require.Eventually(t, func() bool {
				seq, err := s.EventLastSeq(ctx, user)
				require.NoError(t, err)
				return seq >= last
			}, 10*time.Second, time.Millisecond)
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				bus.ServeWS(w, r, events.WSRequest{UserID: user, Since: 0}, events.WSOptions{WriteTimeout: 5 * time.Second})
			}))
			t.Cleanup(func() { bus.Stop(); hs.Close() })

			heap := func() int64 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return int64(m.HeapAlloc)
			}
			base := heap()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
			require.NoError(t, err)
			defer c.CloseNow()
			// Never read: the server's writes fill the socket buffers and
			// wait. Watch the heap meanwhile.
			peak := int64(0)
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
				peak = max(peak, heap()-base)
			}
			// One batch and the event being written take a few MB; the
			// history is 20 MB, and all of it was held before batches
			// were bounded (21-22 MB). The margin is for the garbage and
			// the goroutines of the tests before this one.
			require.Less(t, peak, int64(10<<20), "the replay held %d MB", peak>>20)
		})
	}
}
