// Command apbench is the platform's load command: it keeps C activations in
// flight against a running server until N have completed, and prints the
// throughput and the latency from submit to observed completion. Completion
// is observed on the WebSocket event stream (exact), or by polling like the
// shared yardstick's driver (-observe poll).
//
//	apbench -setup -provider echo -n 2000 -c 64            # registers a bench user, imports a one-agent app
//	apbench -key ak_… -agent <agent id> -n 2000 -c 64
//
// With -mode function it measures a trivial function's synchronous execute
// over HTTP, and with -mode list a filtered, sorted page of a data model
// with -records records (see modes.go); both set up their own user and app.
//
//	apbench -mode function -n 5000 -c 16
//	apbench -mode list -records 10000 -n 2000 -c 16
//
// With -flood it measures password-hashing floods instead (see flood.go;
// scripts/floods.sh runs every case against a fresh server).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

type options struct {
	base, key, agent, provider, model, observe, runtime, mode string
	n, c, warmup, records                                     int
	setup, setupOnly                                          bool
}

func main() {
	var o options
	flag.StringVar(&o.base, "base", "http://127.0.0.1:8080", "the platform's URL")
	flag.StringVar(&o.key, "key", "", "an API key with write:all (or use -setup)")
	flag.StringVar(&o.agent, "agent", "", "the agent to activate (or use -setup)")
	flag.BoolVar(&o.setup, "setup", false, "register a bench user, create a key and import a one-agent app")
	flag.BoolVar(&o.setupOnly, "setup-only", false, "do -setup, print KEY=… and AGENT=… (for the shared yardstick's driver) and exit")
	flag.StringVar(&o.provider, "provider", "echo", "with -setup: the agent's provider_id (echo, openai, …)")
	flag.StringVar(&o.model, "model", "echo", "with -setup: the agent's model")
	flag.StringVar(&o.runtime, "runtime", "llm", "with -setup: the agent's kind: llm, or javascript (a custom agent answering from its input, no LLM)")
	flag.StringVar(&o.observe, "observe", "ws", "how completion is observed: ws (WebSocket events) or poll")
	flag.IntVar(&o.n, "n", 2000, "activations to measure")
	flag.IntVar(&o.c, "c", 64, "activations in flight")
	flag.IntVar(&o.warmup, "warmup", 50, "activations run first and not measured")
	flag.StringVar(&o.mode, "mode", "activate", "what is measured: activate (an agent's activation to its end), function (a trivial function's execute) or list (a filtered, sorted page of -records records)")
	flag.IntVar(&o.records, "records", 10000, "with -mode list: records of the listed model")
	var f floodOptions
	flag.StringVar(&f.kind, "flood", "", "instead of activations, send -n password requests at once: logins (unknown emails), burst (wrong passwords of one account) or register")
	flag.StringVar(&f.from, "from", "127.0.0.1,127.0.0.3,127.0.0.4", "with -flood: local addresses the flood is sent from, in turn")
	flag.StringVar(&f.probeFrom, "probe-from", "127.0.0.2", "with -flood: local address of the other user timing GET /api/v1/users/me")
	flag.IntVar(&f.pid, "pid", 0, "with -flood: the server's pid, to read its memory from /proc/PID/status")
	flag.BoolVar(&f.check, "check", false, "with -flood: exit 1 unless VmHWM < -max-hwm-mb, the probe's p50 < -max-p50 and (burst) 401s <= -limit")
	flag.IntVar(&f.limit, "limit", 10, "with -flood burst: AP_LOGIN_FAILURE_LIMIT of the server")
	flag.Int64Var(&f.maxHWM, "max-hwm-mb", 300, "with -check: the bound on the server's VmHWM, MB")
	flag.DurationVar(&f.maxP50, "max-p50", 100*time.Millisecond, "with -check: the bound on the probe's p50")
	flag.Parse()
	if f.kind != "" {
		if f.kind != "logins" && f.kind != "burst" && f.kind != "register" {
			fmt.Fprintln(os.Stderr, "apbench: -flood is logins, burst or register")
			os.Exit(2)
		}
		if err := flood(context.Background(), o, f); err != nil {
			fmt.Fprintln(os.Stderr, "apbench:", err)
			os.Exit(1)
		}
		return
	}
	runMode := run
	switch o.mode {
	case "activate":
	case "function":
		runMode = runFunction
	case "list":
		runMode = runList
	default:
		fmt.Fprintln(os.Stderr, "apbench: -mode is activate, function or list")
		os.Exit(2)
	}
	if err := runMode(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "apbench:", err)
		os.Exit(1)
	}
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 60 * time.Second}

func run(ctx context.Context, o options) error {
	if o.setup || o.setupOnly {
		if err := setup(ctx, &o); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if o.setupOnly {
			fmt.Printf("KEY=%s\nAGENT=%s\n", o.key, o.agent)
			return nil
		}
		fmt.Printf("setup: agent %s, key %s…\n", o.agent, o.key[:11])
	}
	if o.key == "" || o.agent == "" {
		return errors.New("-key and -agent are required (or -setup)")
	}
	var w *watcher
	if o.observe == "ws" {
		var err error
		if w, err = watch(ctx, o); err != nil {
			return err
		}
		defer w.close()
	}
	return measure(ctx, o, "activations", "submit->completion", func(ctx context.Context, _ int) (time.Duration, bool, error) {
		return one(ctx, o, w)
	})
}

// op is one measured operation, the i-th: its latency and whether it
// succeeded; an error stops the load.
type op func(ctx context.Context, i int) (time.Duration, bool, error)

// measure runs o.warmup operations, then o.n measured ones, with o.c in
// flight, and prints what was measured: what (activations, executions, …)
// and the latency's span.
func measure(ctx context.Context, o options, what, span string, f op) error {
	if o.warmup > 0 {
		if _, err := load(ctx, o.c, o.warmup, false, f); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	res, err := load(ctx, o.c, o.n, true, f)
	if err != nil {
		return err
	}
	res.print(o, what, span)
	return nil
}

// watcher follows the bench user's events and wakes the waiter of each
// activation that ends. An end seen before anyone waits is kept.
type watcher struct {
	conn  *websocket.Conn
	mu    sync.Mutex
	ended map[string]time.Time
	wait  map[string]chan time.Time
}

func watch(ctx context.Context, o options) (*watcher, error) {
	u := strings.Replace(o.base, "http", "ws", 1) + "/api/v1/ws"
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + o.key}}})
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	conn.SetReadLimit(1 << 22)
	w := &watcher{conn: conn, ended: map[string]time.Time{}, wait: map[string]chan time.Time{}}
	go w.read(ctx)
	return w, nil
}

func (w *watcher) read(ctx context.Context) {
	for {
		_, data, err := w.conn.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now()
		var ev struct {
			Type         string `json:"type"`
			ActivationID string `json:"activation_id"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		if ev.Type != "activation_completed" && ev.Type != "activation_failed" {
			continue
		}
		w.mu.Lock()
		if ch, ok := w.wait[ev.ActivationID]; ok {
			ch <- now
			delete(w.wait, ev.ActivationID)
		} else {
			w.ended[ev.ActivationID] = now
		}
		w.mu.Unlock()
	}
}

func (w *watcher) done(id string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.ended[id]; ok {
		delete(w.ended, id)
		ch <- t
		return ch
	}
	w.wait[id] = ch
	return ch
}

func (w *watcher) close() { w.conn.Close(websocket.StatusNormalClosure, "done") }

type result struct {
	lat     []time.Duration
	failed  int64
	elapsed time.Duration
}

func (r *result) print(o options, what, span string) {
	slices.Sort(r.lat)
	q := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	observed := ""
	if o.mode == "activate" {
		observed = ", observed by " + o.observe
	}
	fmt.Printf("%s: %d in %.2fs, %d failed, c=%d%s\n", what, len(r.lat), r.elapsed.Seconds(), r.failed, o.c, observed)
	fmt.Printf("throughput: %.0f %s/s\n", float64(len(r.lat))/r.elapsed.Seconds(), what)
	fmt.Printf("latency %s: p50 %.2fms  p90 %.2fms  p99 %.2fms\n",
		span, ms(q(0.50)), ms(q(0.90)), ms(q(0.99)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// load runs f n times with c in flight and, with progress, a progress line
// a second on stderr.
func load(ctx context.Context, c, n int, progress bool, f op) (*result, error) {
	var next, finished, failed atomic.Int64
	lat := make([]time.Duration, n)
	var firstErr atomic.Value
	start := time.Now()
	stopProgress := make(chan struct{})
	if progress {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					fmt.Fprintf(os.Stderr, "  %d/%d done (%.0f/s)\n", finished.Load(), n, float64(finished.Load())/time.Since(start).Seconds())
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || firstErr.Load() != nil {
					return
				}
				d, ok, err := f(ctx, int(i))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if !ok {
					failed.Add(1)
				}
				lat[i] = d
				finished.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	return &result{lat: lat, failed: failed.Load(), elapsed: time.Since(start)}, nil
}

// one submits an activation and waits for its end; ok is false if it failed.
func one(ctx context.Context, o options, w *watcher) (time.Duration, bool, error) {
	start := time.Now()
	var created struct {
		ID string `json:"activation_id"`
	}
	if err := call(ctx, "POST", o.base+"/api/v1/agents/"+o.agent+"/activate", o.key,
		map[string]any{"input_data": map[string]any{"prompt": "bench"}}, &created); err != nil {
		return 0, false, err
	}
	if w != nil {
		select {
		case t := <-w.done(created.ID):
			return t.Sub(start), true, nil
		case <-time.After(60 * time.Second):
			return 0, false, fmt.Errorf("activation %s: no end event within 60 s", created.ID)
		}
	}
	delay := 10 * time.Millisecond
	for {
		time.Sleep(delay)
		var a struct {
			Status string `json:"status"`
		}
		if err := call(ctx, "GET", o.base+"/api/v1/activations/"+created.ID, o.key, nil, &a); err != nil {
			return 0, false, err
		}
		if a.Status == "completed" || a.Status == "failed" {
			return time.Since(start), a.Status == "completed", nil
		}
		delay = min(delay*3/2, 100*time.Millisecond)
	}
}

func call(ctx context.Context, method, u, token string, body, out any) error {
	return callWith(ctx, client, method, u, token, body, out)
}

func callWith(ctx context.Context, client *http.Client, method, u, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return &statusError{fmt.Sprintf("%s %s: %d %s", method, u, res.StatusCode, data)}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// statusError is an answer with a status of 300 or more.
type statusError struct{ msg string }

func (e *statusError) Error() string { return e.msg }

// setup registers a fresh bench user, makes a write:all key and imports an
// app with one agent (an LLM agent, or a JavaScript one with -runtime).
func setup(ctx context.Context, o *options) error {
	if err := account(ctx, o); err != nil {
		return err
	}
	agent := map[string]any{"name": "bench", "agent_type_id": "llm", "version": "1.0.0",
		"agent_config": map[string]any{"model": o.model, "provider_id": o.provider, "temperature": 0}}
	if o.runtime == "javascript" {
		agent["agent_type_id"] = "custom"
		agent["agent_config"] = map[string]any{"runtime": "javascript",
			"code": "async function run(input, ctx) { return { response: 'ok: ' + input.prompt }; }"}
	}
	appID, err := importApp(ctx, *o, []any{agent})
	if err != nil {
		return err
	}
	var agents struct {
		Agents []struct {
			ID string `json:"agent_id"`
		} `json:"agents"`
	}
	if err := call(ctx, "GET", o.base+"/api/v1/apps/"+appID+"/agents", o.key, nil, &agents); err != nil {
		return err
	}
	if len(agents.Agents) == 0 {
		return errors.New("the imported app has no agent")
	}
	o.agent = agents.Agents[0].ID
	return nil
}

// account registers a fresh bench user and sets o.key to a new write:all
// key of theirs.
func account(ctx context.Context, o *options) error {
	email := "bench-" + uuid.NewString()[:8] + "@example.com"
	if err := call(ctx, "POST", o.base+"/api/v1/auth/register", "", map[string]string{
		"email": email, "password": "bench-password", "confirm_password": "bench-password"}, nil); err != nil {
		return err
	}
	var login struct {
		Token string `json:"access_token"`
	}
	if err := call(ctx, "POST", o.base+"/api/v1/auth/login", "", map[string]string{"email": email, "password": "bench-password"}, &login); err != nil {
		return err
	}
	var key struct {
		Key string `json:"key"`
	}
	if err := call(ctx, "POST", o.base+"/api/v1/user/api-keys", login.Token,
		map[string]any{"name": "bench", "scopes": []string{"write:all"}}, &key); err != nil {
		return err
	}
	o.key = key.Key
	return nil
}

// importApp imports an app with agents under o.key and returns its id.
func importApp(ctx context.Context, o options, agents []any) (string, error) {
	manifest := map[string]any{
		"name": "Bench", "slug": "bench-" + uuid.NewString()[:8], "version": "1.0.0",
		"agents": agents,
	}
	var app struct {
		AppID string `json:"app_id"`
	}
	if err := call(ctx, "POST", o.base+"/api/v1/apps/import-manifest", o.key, manifest, &app); err != nil {
		return "", err
	}
	return app.AppID, nil
}
