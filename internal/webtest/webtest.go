// Package webtest runs the web UI for tests: a real platform (real server,
// real database of either dialect) behind its real HTTP handler, and a
// headless Chromium driven by chromedp to use it the way a person does.
// Each page's test opens a Browser, acts through the helpers (Open, Fill,
// Click, WaitText…), asserts on visible text and saves a screenshot of
// each page under the test's temp dir.
//
// Chromium is Debian's (apt-get install chromium). Without it the browser
// tests skip, or fail under AP_TEST_REQUIRE_ALL=1 (CI).
package webtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/testlog"
)

// Env is a running platform.
type Env struct {
	Server *server.Server
	// URL is the base URL of the HTTP server (http://127.0.0.1:port).
	URL  string
	Logs *testlog.Buffer
}

// Start runs a platform on a fresh database of dialect d; vars are AP_*
// settings. Its AP_PUBLIC_URL is the test server's own URL unless vars
// says otherwise, so that what the platform sends a browser to (an OAuth
// provider's redirect back to the callback, entry_point_url) leads back
// to it. Everything stops when the test ends.
func Start(t testing.TB, d store.Dialect, vars map[string]string) *Env {
	t.Helper()
	// Listening first gives the URL before the platform is configured.
	// (Closed at the end if Start fails halfway; otherwise below, before
	// the platform stops, as Close is idempotent.)
	hs := httptest.NewUnstartedServer(nil)
	t.Cleanup(hs.Close)
	all := map[string]string{"AP_DATA_DIR": t.TempDir(), "AP_DATABASE_URL": testdb.Migrated(t, d), "AP_RATE_LIMIT": "100000",
		"AP_PUBLIC_URL": "http://" + hs.Listener.Addr().String()}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return all[k] })
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	logs := &testlog.Buffer{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Real argon2id, cheap enough for -race.
	srv, err := server.New(context.Background(), cfg, lg, server.Options{HTTP: true,
		Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	hs.Config.Handler = srv.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	return &Env{Server: srv, URL: hs.URL, Logs: logs}
}

// Chromium is the browser's path; it skips t without one (fails under
// AP_TEST_REQUIRE_ALL=1).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	testdb.Need(t, errors.New("no chromium on PATH"), "chromium (apt-get install chromium)")
	return ""
}

// Browser is one headless Chromium with one tab, on one platform.
type Browser struct {
	T    testing.TB
	Ctx  context.Context
	Base string
	// Dir holds the screenshots: the test's temp dir, or a folder of
	// $AP_TEST_SCREENSHOTS to keep them.
	Dir string

	wait   time.Duration
	mu     sync.Mutex
	errors []string
	shots  int
}

// Options shape a Browser.
type Options struct {
	// Width and Height of the viewport; zero: 1280x900.
	Width, Height int64
	// Timeout bounds the whole browser session; zero: 90 s.
	Timeout time.Duration
	// Wait bounds each wait (WaitPath, WaitText, Until); zero: 15 s.
	Wait time.Duration
	// Hosts are more hosts the browser may reach besides the platform's
	// (an in-test OAuth provider on egresstest's 127.0.0.2).
	Hosts []string
}

// NewBrowser starts Chromium for base (an Env's URL). Only base's host
// (and o.Hosts) resolves: a page that tried to load anything from
// elsewhere would fail.
// JavaScript errors and Content-Security-Policy violations are collected;
// the test fails on any when it ends.
func NewBrowser(t testing.TB, base string, o Options) *Browser {
	t.Helper()
	path := Chromium(t)
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	if o.Wait == 0 {
		o.Wait = 15 * time.Second
	}
	rules := "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
	for _, h := range o.Hosts {
		rules += ", EXCLUDE " + h
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(int(o.Width), int(o.Height)),
		chromedp.Flag("host-resolver-rules", rules))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{T: t, Base: strings.TrimSuffix(base, "/"), Dir: t.TempDir(), wait: o.Wait}
	if keep := os.Getenv("AP_TEST_SCREENSHOTS"); keep != "" {
		// Screenshots to look at after the run, one folder per test.
		b.Dir = filepath.Join(keep, unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"))
		require.NoError(t, os.MkdirAll(b.Dir, 0o755))
	}
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, o.Timeout)
	b.Ctx = ctx
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	b.Do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, log.Enable, struct{}{})
		return err
	}), chromedp.EmulateViewport(o.Width, o.Height))
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.errors) > 0 {
			t.Errorf("the browser reported errors:\n%s", strings.Join(b.errors, "\n"))
		}
	})
	return b
}

// listen collects uncaught exceptions and the browser's own error
// messages (CSP violations among them); failed requests are the test's
// business (an error answer is often what it expects).
func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
			msg = fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if msg != "" {
		b.mu.Lock()
		b.errors = append(b.errors, msg)
		b.mu.Unlock()
	}
}

// Do runs steps, failing the test on an error.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	require.NoError(b.T, chromedp.Do(b.Ctx, steps...))
}

// Run runs an action with a value, failing the test on an error.
func Run[T any](b *Browser, a chromedp.Action[T]) T {
	b.T.Helper()
	v, err := chromedp.Run(b.Ctx, a)
	require.NoError(b.T, err)
	return v
}

// Open loads path (of Base) and waits for its body.
func (b *Browser) Open(path string) {
	b.T.Helper()
	b.Do(chromedp.Navigate(b.Base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// Path is the current page's path and query.
func (b *Browser) Path() string {
	b.T.Helper()
	loc := Run(b, chromedp.Location())
	return strings.TrimPrefix(loc, b.Base)
}

// WaitPath waits until the page's path and query are path (after a
// redirect, a submission).
func (b *Browser) WaitPath(path string) {
	b.T.Helper()
	b.Until("location.pathname + location.search === "+jsString(path), "the page to be "+path)
}

// Until polls the JavaScript expression until it is true, failing the test
// at the browser's deadline. Unlike chromedp.Poll it survives the page
// navigating meanwhile (a form that submits and then loads the next page):
// an evaluation that fails because its document went away is retried in
// the next one.
func (b *Browser) Until(expr, what string) {
	b.T.Helper()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(b.wait)
	defer deadline.Stop()
	var last error
	for {
		ok, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-b.Ctx.Done():
			b.T.Fatalf("waiting for %s: %v (last error: %v)", what, b.Ctx.Err(), last)
		case <-deadline.C:
			loc, _ := chromedp.Run(b.Ctx, chromedp.Location())
			text, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			shot := b.Shot("timeout")
			b.T.Fatalf("waiting for %s: not after %s (last error: %v)\nat %s, showing:\n%s\n(screenshot %s)", what, b.wait, last, loc, text, shot)
		case <-tick.C:
		}
	}
}

// Fill replaces the value of the input sel with value, typing it as a
// person would (so the page's input events fire).
func (b *Browser) Fill(sel, value string) {
	b.T.Helper()
	b.Do(chromedp.WaitVisible(chromedp.CSS(sel)))
	// chromedp.Clear leaves a value the page's script set, and SetValue
	// refuses "": clear it the way a select-all and delete would.
	Eval[bool](b, fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = ""; return true; })()`, jsString(sel)))
	if value != "" {
		b.Do(chromedp.SendKeys(chromedp.CSS(sel), value))
	}
}

// SetValue sets a field's value directly: for long texts (a manifest),
// where typing key by key would be slow.
func (b *Browser) SetValue(sel, value string) {
	b.T.Helper()
	b.Do(chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.SetValue(chromedp.CSS(sel), value))
}

// Click clicks the first visible element sel.
func (b *Browser) Click(sel string) {
	b.T.Helper()
	// A live update may replace the element between finding it and
	// clicking it (CDP: "No node with given id found"): find it again.
	for tries := 1; ; tries++ {
		err := chromedp.Do(b.Ctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
		if err == nil || tries == 5 || !strings.Contains(err.Error(), "No node with given id found") {
			require.NoError(b.T, err)
			return
		}
	}
}

// Text is the visible text of sel.
func (b *Browser) Text(sel string) string {
	b.T.Helper()
	b.Do(chromedp.WaitVisible(chromedp.CSS(sel)))
	return Run(b, chromedp.Text(chromedp.CSS(sel)))
}

// WaitText waits until the first element sel is visible and its text
// contains text, and returns its text.
func (b *Browser) WaitText(sel, text string) string {
	b.T.Helper()
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%s); return !!el && el.offsetParent !== null && el.innerText.includes(%s); })()`,
		jsString(sel), jsString(text))
	b.Until(expr, fmt.Sprintf("%q in %s", text, sel))
	// Read in the page, not by node id: a page that has just loaded may
	// still replace the node (CDP's "No node with given id found").
	return Run(b, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const el = document.querySelector(%s); return el ? el.innerText : ""; })()`, jsString(sel))))
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](b *Browser, expr string) T {
	b.T.Helper()
	return Run(b, chromedp.Evaluate[T](expr))
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// Shot saves a screenshot of the whole page as Dir/NN-name.png and
// returns its path.
func (b *Browser) Shot(name string) string {
	b.T.Helper()
	png := Run(b, chromedp.FullScreenshot(100))
	b.mu.Lock()
	b.shots++
	n := b.shots
	b.mu.Unlock()
	path := filepath.Join(b.Dir, fmt.Sprintf("%02d-%s.png", n, unsafeName.ReplaceAllString(strings.ToLower(name), "-")))
	require.NoError(b.T, os.WriteFile(path, png, 0o644))
	b.T.Logf("screenshot: %s", path)
	return path
}

// NoHorizontalOverflow asserts that nothing sticks out sideways (the page
// needs no sideways scrolling at the viewport's width).
func (b *Browser) NoHorizontalOverflow() {
	b.T.Helper()
	widths := Eval[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`)
	require.LessOrEqual(b.T, widths[0], widths[1], "the page %s is wider than the viewport", b.Path())
}

// void drops an action's value, to run it among Do's steps.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

func jsString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// Client is an HTTP client that does not follow redirects, for the plain
// HTTP tests of pages.
func Client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Answer is an HTTP answer with its body read.
type Answer struct {
	*http.Response
	Body string
}

// Call sends method path to the server with body (of contentType when
// that is not empty) and the header pairs, through Client (redirects are
// answers), and reads the answer.
func (e *Env) Call(t testing.TB, method, path, contentType, body string, header ...string) Answer {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return Answer{res, string(b)}
}
