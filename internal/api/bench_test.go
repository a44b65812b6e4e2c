package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/cputime"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// BenchmarkGetMeWithAPIKey is the hot authenticated read end to end: HTTP,
// key lookup by hash, scope check, rate limit, one user read, JSON out.
func BenchmarkGetMeWithAPIKey(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
			key := e.keyWith(e.signup("bench@example.com"), "read:all")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var l latencies
			b.ReportAllocs()
			b.SetParallelism(benchParallelism(1))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					took, err := getOK(client, e.url+"/api/v1/users/me", key)
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

// BenchmarkActivateToComplete is the activation path end to end: the HTTP
// activate call, the transaction with its job and event, River's fetch,
// the run on the echo provider, the result's transaction, and the
// completed event, observed on the bus as a WebSocket client would.
func BenchmarkActivateToComplete(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			benchActivateToComplete(b, newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000", "AP_MAX_INFLIGHT": "16"}), 0)
		})
	}
}

// BenchmarkActivateBesideWaiting is BenchmarkActivateToComplete with 0 or
// 10,000 activations of the same user waiting for an approval meanwhile:
// waiting runs hold no slot, no worker and no River fetch, so new ones
// should not slow down.
func BenchmarkActivateBesideWaiting(b *testing.B) {
	for _, d := range testdb.Dialects {
		for _, n := range []int{0, 10000} {
			b.Run(fmt.Sprintf("%s/waiting=%d", d, n), func(b *testing.B) {
				benchActivateToComplete(b, newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000", "AP_MAX_INFLIGHT": "16"}), n)
			})
		}
	}
}

// seedWaiting records n activations of agentID waiting for an approval,
// as a run's wait records them (the activation, its wait step, its
// waitpoint and the job of its timeout), in transactions of 500.
func seedWaiting(b *testing.B, e *env, userID, agentID string, n int) {
	ctx := context.Background()
	for done := 0; done < n; {
		err := e.srv.Store.InTx(ctx, func(tx *store.Store) error {
			for i := 0; i < 500 && done < n; i, done = i+1, done+1 {
				now := store.Now()
				a := &store.Activation{ID: uuid.NewString(), UserID: userID, AgentID: agentID, Status: store.StatusRunning,
					InputData: json.RawMessage(`{"prompt":"wait"}`), Priority: 2, CreatedAt: now, StartedAt: &now, Attempt: 1, WorkerID: "w"}
				if err := tx.ActivationCreate(ctx, a); err != nil {
					return err
				}
				wp := &store.Waitpoint{ID: uuid.NewString(), ActivationID: a.ID, UserID: userID, Kind: store.WaitApproval,
					ToolCalls: json.RawMessage(`[{"tool_call_id":"c1","name":"t","arguments":{}}]`), StepIndex: 0,
					ExpiresAt: now.Add(24 * time.Hour), CreatedAt: now}
				if err := tx.StepsInsert(ctx, &store.Step{ActivationID: a.ID, Index: 0, Kind: store.StepWait, Status: store.StepWaiting, StartedAt: now}); err != nil {
					return err
				}
				if err := tx.WaitpointCreate(ctx, wp); err != nil {
					return err
				}
				if _, err := tx.ActivationWait(ctx, a.ID, "w", json.RawMessage(`{"waitpoint_id":"`+wp.ID+`"}`)); err != nil {
					return err
				}
				if _, err := e.srv.Queue.InsertTx(ctx, tx, activation.WaitTimeoutArgs{WaitpointID: wp.ID},
					&river.InsertOpts{ScheduledAt: wp.ExpiresAt}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchActivateToComplete(b *testing.B, e *env, beside int) {
	token := e.signup("bench@example.com")
	key := e.keyWith(token, "write:all")
	f := e.llmAgent(token, nil, 0)
	me := e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(b, 200)
	if beside > 0 {
		seedWaiting(b, e, me.str("id"), f.agentID, beside)
		if e.srv.Store.Dialect() == store.SQLite {
			// The seed's pages out of the write-ahead log first: its
			// checkpoint is the seed's cost, not the runs'.
			if _, err := e.srv.Store.DB().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				b.Fatal(err)
			}
		}
	}
	sub := e.srv.Events.Subscribe(me.str("id"), events.Filter{}, 1<<16)
	defer sub.Close()
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	go func() {
		for ev := range sub.C {
			if ev.Type == events.ActivationCompleted || ev.Type == events.ActivationFailed {
				mu.Lock()
				if ch, ok := waiting[ev.ActivationID]; ok {
					close(ch)
					delete(waiting, ev.ActivationID)
				}
				mu.Unlock()
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := []byte(`{"input_data":{"prompt":"hello"}}`)
	url := e.url + "/api/v1/agents/" + f.agentID + "/activate"
	b.ReportAllocs()
	b.SetParallelism(8) // 16 concurrent activations on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var created struct {
				ID string `json:"activation_id"`
			}
			if _, err := benchPost(client, url, key, body, &created); err != nil {
				b.Error(err)
				return
			}
			ch := make(chan struct{})
			mu.Lock()
			waiting[created.ID] = ch
			mu.Unlock()
			// The completion may have been seen before we waited for it.
			a, err := e.srv.Store.ActivationGet(context.Background(), created.ID)
			if err == nil && (a.Status == "completed" || a.Status == "failed") {
				mu.Lock()
				delete(waiting, created.ID)
				mu.Unlock()
				continue
			}
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				b.Errorf("activation %s did not complete", created.ID)
				return
			}
		}
	})
}

// BenchmarkActivateCreate is the create path alone: the HTTP activate call
// with an Idempotency-Key and a realistic input (its decoding, checks and
// request hash) and the transaction with its job and event. The queue is
// paused so that no run competes with the creates.
func BenchmarkActivateCreate(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
			token := e.signup("bench@example.com")
			key := e.keyWith(token, "write:all")
			f := e.llmAgent(token, nil, 0)
			if err := e.srv.Activations.SetPaused(context.Background(), true); err != nil {
				b.Fatal(err)
			}
			body := []byte(`{"input_data":{"prompt":"Summarise the ticket below for the on-call engineer.",` +
				`"ticket":{"id":48213,"title":"Checkout fails with 502","tags":["payments","p1","eu-west"],` +
				`"reporter":{"name":"Ann","email":"ann@example.com"},"body":"Since 14:02 UTC about 3% of checkouts fail; ` +
				`the gateway answers 502 after 30 s. Retries succeed. No deploy since yesterday."},` +
				`"options":{"max_words":120,"tone":"neutral","language":"en"}},"context":{"chat_id":"c1"}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			url := e.url + "/api/v1/agents/" + f.agentID + "/activate"
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(n.Add(1), 10))
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGetActivation is the polling read of a completed activation.
func BenchmarkGetActivation(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
			token := e.signup("bench@example.com")
			key := e.keyWith(token, "read:all")
			f := e.llmAgent(token, nil, 0)
			id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}}, bearer(token)).expect(b, 201).str("activation_id")
			e.await(token, id)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", e.url+"/api/v1/activations/"+id, nil)
					req.Header.Set("Authorization", "Bearer "+key)
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		})
	}
}

// BenchmarkFunctionExecute is a trivial function's synchronous execute end
// to end, 16 in flight: HTTP, the function's read, the input's check
// against its schema, a fresh JavaScript VM, and the execution's row.
func BenchmarkFunctionExecute(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
			token := e.signup("bench@example.com")
			key := e.keyWith(token, "write:all")
			appID := e.newApp(token, "bench")
			fn := e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "echo", "code": "async function run(input) { return input; }",
				"input_schema": map[string]any{"type": "object"}, "timeout_seconds": 10}, bearer(token)).expect(b, 201).str("id")
			url := e.url + "/api/v1/apps/" + appID + "/functions/" + fn + "/execute"
			body := []byte(`{"input":{"n":1}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var l latencies
			b.ReportAllocs()
			b.SetParallelism(8) // 16 in flight on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					start := time.Now()
					var out struct {
						Status string `json:"status"`
					}
					status, err := benchPost(client, url, key, body, &out)
					if err != nil || status != 200 || out.Status != "completed" {
						b.Errorf("status %d, execution %q: %v", status, out.Status, err)
						return
					}
					l.add(time.Since(start))
				}
			})
			b.StopTimer()
			l.report(b, "")
		})
	}
}

// benchPost POSTs body to url with key and decodes the answer into out.
func benchPost(client *http.Client, url, key string, body []byte, out any) (int, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	return res.StatusCode, json.NewDecoder(res.Body).Decode(out)
}

// BenchmarkToolLoop is what the tool loop costs beside a plain activation
// of the same echo agent: "plain" is one LLM step; "3steps" asks for an
// HTTP tool (a local server), runs it and answers: three steps (LLM, tool,
// LLM), each committed with its event. It reports the process's CPU per
// activation (server and client: they share the process) and the rows
// each writes to the step journal and the event log.
func BenchmarkToolLoop(b *testing.B) {
	ping := egresstest.NewServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pong":true}`)
	}))
	for _, d := range testdb.Dialects {
		for _, tc := range []struct {
			name   string
			config map[string]any
			prompt string
		}{
			{"plain", nil, "ping"},
			{"3steps", map[string]any{"model": "echo", "provider_id": "echo",
				"tools": []any{map[string]any{"type": "http", "name": "ping", "method": "GET", "url": ping.URL}}}, "call ping {}"},
		} {
			b.Run(string(d)+"/"+tc.name, func(b *testing.B) {
				e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000", "AP_MAX_INFLIGHT": "16"})
				token := e.signup("bench@example.com")
				key := e.keyWith(token, "write:all")
				f := e.llmAgent(token, tc.config, 30)
				body := []byte(`{"agent_id":"` + f.agentID + `","input_data":{"prompt":"` + tc.prompt + `"}}`)
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				rows := func() int {
					n := 0
					for _, table := range []string{"activation_steps", "events"} {
						var c int
						if err := e.srv.Store.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&c); err != nil {
							b.Fatal(err)
						}
						n += c
					}
					return n
				}
				before := rows()
				cpu := cputime.Process()
				b.ReportAllocs()
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req, _ := http.NewRequest("POST", e.url+"/api/v1/activations", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+key)
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Prefer", "wait=30")
						res, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						var a struct {
							Status string `json:"status"`
						}
						err = json.NewDecoder(res.Body).Decode(&a)
						res.Body.Close()
						if err != nil || a.Status != "completed" {
							b.Errorf("activation: %v %q", err, a.Status)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(cputime.Process()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(rows()-before)/float64(b.N), "rows/op")
			})
		}
	}
}

// BenchmarkReach is one echo LLM agent called three ways, each answering
// once the run has ended: activate with Prefer: wait over the API, an MCP
// tools/call (stateless Streamable HTTP, no session), and an
// OpenAI-compatible chat completion. It reports the process's CPU per call.
//
// "paired" calls the three ways in turn, 200 calls each (b.N rounds, each
// starting with the next way), and reports each way's CPU per call and
// the two ratios to activate-and-wait: this machine's speed wanders by
// more between two runs of a minute than the differences measured, which
// alternating every ~0.1 s cancels.
func BenchmarkReach(b *testing.B) {
	for _, d := range testdb.Dialects {
		e := newEnv(b, d, map[string]string{"AP_RATE_LIMIT": "1000000000", "AP_MAX_INFLIGHT": "16"})
		token := e.signup("bench@example.com")
		key := e.keyWith(token, "read:all", "write:all")
		app := e.importManifest(key, exampleManifest(b)).expect(b, 201)
		appID, slug := app.str("app_id"), app.str("slug")
		triage := e.agentNamed(key, appID, "triage")
		ways := []reachWay{
			{"activate-wait", "/api/v1/activations", `{"agent_id":"` + triage + `","input_data":{"prompt":"My invoice is wrong"}}`,
				map[string]string{"Prefer": "wait=30"}},
			{"mcp-call", "/api/v1/apps/" + appID + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"triage","arguments":{"prompt":"My invoice is wrong"}}}`,
				map[string]string{"Accept": "application/json, text/event-stream"}},
			{"openai-completion", "/api/v1/openai/chat/completions", `{"model":"` + slug + `/triage","messages":[{"role":"user","content":"My invoice is wrong"}]}`, nil},
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		defer client.CloseIdleConnections()
		rows := func() int {
			var n int
			if err := e.srv.Store.DB().QueryRow("SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM activation_steps) + (SELECT count(*) FROM activations)").Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		for _, w := range ways {
			b.Run(string(d)+"/"+w.name, func(b *testing.B) {
				before := rows()
				cpu := cputime.Process()
				b.ReportAllocs()
				b.ResetTimer()
				w.call(b, e.url, key, client, b.N)
				b.StopTimer()
				b.ReportMetric(float64(cputime.Process()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(rows()-before)/float64(b.N), "rows/op")
			})
		}
		b.Run(string(d)+"/paired", func(b *testing.B) {
			const block = 200
			spent := make([]time.Duration, len(ways))
			for round := range b.N {
				// Each way in turn goes first: what one block leaves to
				// collect is paid in the next.
				for j := range ways {
					i := (round + j) % len(ways)
					cpu := cputime.Process()
					ways[i].call(b, e.url, key, client, block)
					spent[i] += cputime.Process() - cpu
				}
			}
			perCall := func(i int) float64 { return float64(spent[i]) / float64(time.Millisecond) / float64(b.N*block) }
			for i, w := range ways {
				b.ReportMetric(perCall(i), w.name+"-cpu-ms/call")
			}
			b.ReportMetric(perCall(1)/perCall(0), "mcp/activate")
			b.ReportMetric(perCall(2)/perCall(0), "openai/activate")
		})
	}
}

// reachWay is one way of calling an agent: a POST with its body and
// headers.
type reachWay struct {
	name, path, body string
	header           map[string]string
}

// call makes n calls, 8 at once, each checked for the agent's answer.
func (w reachWay) call(b *testing.B, base, key string, client *http.Client, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest("POST", base+w.path, strings.NewReader(w.body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				for k, v := range w.header {
					req.Header.Set(k, v)
				}
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				out, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode >= 300 || !bytes.Contains(out, []byte("echo: My invoice is wrong")) {
					b.Errorf("%s: %d %s", w.name, res.StatusCode, out)
					return
				}
			}
		})
	}
	wg.Wait()
}
