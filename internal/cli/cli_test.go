package cli_test

// These tests drive the real agentplatform binary the way an operator does:
// environment variables in, banner and exit codes out, signals to stop it.
// TestMain builds the binary once (with the race detector when the tests
// themselves run with -race, so data races in the server fail CI too).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/testlog"
)

// binary is the agentplatform executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agentplatform-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli test: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "agentplatform")
	args := []string{"build", "-o", binary}
	if raceEnabled() {
		args = append(args, "-race")
	}
	// The test's working directory is the package directory, internal/cli.
	build := exec.Command("go", append(args, "../../cmd/agentplatform")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cli test: build agentplatform:", err)
		return 1
	}
	return m.Run()
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

const (
	startTimeout = 60 * time.Second // generous: the binary may run under -race
	stopTimeout  = 30 * time.Second // the contract: SIGTERM drains and exits
	runTimeout   = 60 * time.Second // migrate, user create and the like
)

// environ is a minimal, explicit environment: nothing of the developer's
// AP_* variables leaks in. Later entries override earlier ones.
func environ(dataDir string, extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"AP_DATA_DIR=" + dataDir,
		"AP_ADDR=127.0.0.1:0",
		"AP_LOG_LEVEL=warn",
	}
	return append(env, extra...)
}

// result is a finished command.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs a short command to completion.
func run(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run %v: %v", args, err)
	}
	require.NoError(t, ctx.Err(), "agentplatform %v did not finish within %s\nstdout:\n%s\nstderr:\n%s",
		args, runTimeout, stdout.String(), stderr.String())
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// lineWriter hands complete lines of a stream to a channel and keeps them all.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	all   strings.Builder
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		select {
		case w.lines <- line:
		default: // nobody reads this far; the line stays in all
		}
	}
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// proc is a running agentplatform serve.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *lineWriter
	stderr *testlog.Buffer
	done   chan struct{} // closed when the process has exited
	// URL and Banner are set by startServe.
	URL    string
	Banner []string
}

// start starts a long-running command; t.Cleanup kills it if it still runs.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{
		t:      t,
		cmd:    exec.Command(binary, args...),
		stdout: &lineWriter{lines: make(chan string, 100)},
		stderr: &testlog.Buffer{},
		done:   make(chan struct{}),
	}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("agentplatform %v output:\nstdout:\n%s\nstderr:\n%s", args, p.stdout, p.stderr)
		}
	})
	return p
}

var listenLine = regexp.MustCompile(`^Agent Platform listening on (https?://\S+) \(docs: \S+/docs\)$`)

// startServe runs `agentplatform serve args…` and waits for its banner: the
// URL line, the database line and the worker line.
func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := start(t, env, append([]string{"serve"}, args...)...)
	first := p.nextLine()
	m := listenLine.FindStringSubmatch(first)
	require.NotNil(t, m, "first stdout line is not the listening banner: %q\nstderr:\n%s", first, p.stderr)
	p.URL = m[1]
	p.Banner = []string{first, p.nextLine(), p.nextLine()}
	return p
}

// nextLine is the process's next stdout line; it fails the test when the
// process exits or stays silent too long.
func (p *proc) nextLine() string {
	p.t.Helper()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line := <-p.stdout.lines:
		return line
	case <-p.done:
		// The process may have written its last lines just before exiting.
		select {
		case line := <-p.stdout.lines:
			return line
		default:
		}
		p.t.Fatalf("agentplatform exited (%s) before printing the expected line\nstdout:\n%s\nstderr:\n%s",
			p.cmd.ProcessState, p.stdout, p.stderr)
	case <-timer.C:
		p.t.Fatalf("no stdout line within %s\nstdout:\n%s\nstderr:\n%s", startTimeout, p.stdout, p.stderr)
	}
	return ""
}

// signal sends sig to the process.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-timer.C:
		p.t.Fatalf("agentplatform did not exit within %s\nstdout:\n%s\nstderr:\n%s", timeout, p.stdout, p.stderr)
		return -1
	}
}

// stop sends SIGTERM and requires a clean exit within the drain budget.
func (p *proc) stop() {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	code := p.wait(stopTimeout)
	require.Equal(p.t, 0, code, "exit code after SIGTERM\nstderr:\n%s", p.stderr)
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// get returns the status and body of GET url.
func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, want, fi.Mode().Perm(), "mode of %s", path)
}

func TestServeSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// info level: the test checks the drain message.
	p := startServe(t, environ(dir, "AP_LOG_LEVEL=info"))

	require.Equal(t, "database: sqlite "+filepath.Join(dir, "agentplatform.db"), p.Banner[1])
	require.Equal(t, "worker: running", p.Banner[2])

	code, body := get(t, p.URL+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)

	requireMode(t, filepath.Join(dir, "secret.key"), 0o600)
	requireMode(t, filepath.Join(dir, "agentplatform.db"), 0o600)

	p.stop()
	require.Contains(t, p.stderr.String(), "shutting down")
}

func TestServeNoWorker(t *testing.T) {
	t.Parallel()
	p := startServe(t, environ(t.TempDir()), "--no-worker")
	require.Equal(t, "worker: off (--no-worker)", p.Banner[2])
	code, body := get(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	p.stop()
}

func TestServePostgres(t *testing.T) {
	t.Parallel()
	dsn := testdb.URL(t, store.Postgres)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	password, ok := u.User.Password()
	if !ok {
		// The local test server trusts TCP connections and ignores a
		// password, so give the URL one to check that it is never shown.
		password = "never-show-this-pw"
		u.User = url.UserPassword(u.User.Username(), password)
	}
	p := startServe(t, environ(t.TempDir(), "AP_DATABASE_URL="+u.String()))

	require.True(t, strings.HasPrefix(p.Banner[1], "database: postgres "), "banner: %q", p.Banner)
	require.NotContains(t, strings.Join(p.Banner, "\n"), password)
	require.NotContains(t, p.stderr.String(), password)

	code, body := get(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	p.stop()
	require.NotContains(t, p.stdout.String()+p.stderr.String(), password)
}

// TestSIGTERMDuringRequests checks the drain: requests in flight when
// SIGTERM arrives are answered, later ones are refused at the socket, and
// none gets a 5xx.
func TestSIGTERMDuringRequests(t *testing.T) {
	t.Parallel()
	// The health probes share the per-IP rate limit; lift it so the
	// hammering below measures the shutdown, not the limiter.
	p := startServe(t, environ(t.TempDir(), "AP_RATE_LIMIT=100000000"))

	const clients, warmUp = 50, 200
	warm := make(chan struct{}) // closed at the warmUp-th response
	var (
		signaled  atomic.Bool
		responses atomic.Int64
		mu        sync.Mutex
		bad       []string // non-200 answers and errors before SIGTERM
		wg        sync.WaitGroup
	)
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) < 20 {
			bad = append(bad, s)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-p.done:
					return
				default:
				}
				resp, err := client.Get(p.URL + "/readyz")
				if err != nil {
					if signaled.Load() {
						return // refused or reset once shutdown began: fine
					}
					record("error before SIGTERM: " + err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if responses.Add(1) == warmUp {
					close(warm)
				}
				if resp.StatusCode != http.StatusOK {
					record(fmt.Sprintf("%d %s", resp.StatusCode, body))
				}
			}
		})
	}

	// Let the load build up so that SIGTERM lands on busy connections.
	select {
	case <-warm:
	case <-p.done:
		t.Fatalf("agentplatform exited under load\nstderr:\n%s", p.stderr)
	case <-time.After(startTimeout):
		t.Fatalf("only %d responses within %s", responses.Load(), startTimeout)
	}
	atSignal := responses.Load()
	signaled.Store(true)
	p.signal(syscall.SIGTERM)
	code := p.wait(stopTimeout)
	wg.Wait()

	require.Equal(t, 0, code, "exit code after SIGTERM\nstderr:\n%s", p.stderr)
	require.Empty(t, bad, "every answer must be 200 (%d responses, %d before SIGTERM)", responses.Load(), atSignal)
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := environ(dir)
	for i := range 2 {
		r := run(t, env, "", "migrate")
		require.Equal(t, 0, r.code, "migrate #%d: %s", i+1, r)
		require.Contains(t, r.stdout, "database is up to date", "migrate #%d", i+1)
	}
	requireMode(t, filepath.Join(dir, "agentplatform.db"), 0o600)
}

func TestUserCreateThenLogin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := environ(dir)
	const email, password = "admin@example.com", "correct horse battery staple"
	create := []string{"user", "create", "--email", email, "--password-stdin", "--admin"}

	r := run(t, env, password+"\n", create...)
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "created admin "+email)
	require.NotContains(t, r.stdout+r.stderr, password)

	r = run(t, env, password+"\n", create...)
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "Email already registered")

	r = run(t, env, password+"\n", "user", "create", "--email", "other@example.com")
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "--password-stdin")

	r = run(t, env, "short\n", "user", "create", "--email", "short@example.com", "--password-stdin")
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "8 characters")

	r = run(t, env, "", "user", "frobnicate")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, "user create --email")

	p := startServe(t, env)
	form := url.Values{"email": {email}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, p.URL+"/api/v1/auth/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var login struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	require.NoError(t, json.Unmarshal(body, &login), string(body))
	require.True(t, strings.HasPrefix(login.AccessToken, "st_"), "access_token %q", login.AccessToken)

	code, me := get(t, p.URL+"/api/v1/users/me", "Authorization", "Bearer "+login.AccessToken)
	require.Equal(t, http.StatusOK, code, me)
	require.Contains(t, me, `"is_admin":true`)
	require.Contains(t, me, `"email":"`+email+`"`)
	p.stop()
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	env := environ(t.TempDir())

	r := run(t, env, "", "version")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "agentplatform 0.1.0 (api v1)\n", r.stdout)

	r = run(t, env, "", "frobnicate")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, `unknown command "frobnicate"`)
	require.Contains(t, r.stderr, "Usage: agentplatform")
	require.Empty(t, r.stdout)

	r = run(t, env, "")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, "Usage: agentplatform")

	r = run(t, env, "", "serve", "--no-such-flag")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, "no-such-flag")

	r = run(t, env, "", "migrate", "now")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, `unexpected argument "now"`)
}

// One process serves a SQLite database: a second one on the same data
// refuses to start and says why.
func TestSecondProcessOnSQLiteRefuses(t *testing.T) {
	t.Parallel()
	env := environ(t.TempDir())
	p := startServe(t, env)
	r := run(t, env, "", "worker")
	require.Equal(t, 1, r.code, r.String())
	require.Contains(t, r.stderr, "in use by another agentplatform process")
	code, body := get(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	p.stop()
}

func TestBadConfigurationFailsLoudly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, setting, want string
	}{
		{"env", "AP_ENV=staging", "AP_ENV"},
		{"rate limit", "AP_RATE_LIMIT=abc", "AP_RATE_LIMIT"},
		{"secret key", "AP_SECRET_KEY=notbase64", "AP_SECRET_KEY"},
		{"short secret key", "AP_SECRET_KEY=" + base64.StdEncoding.EncodeToString([]byte("sixteen byte key")), "AP_SECRET_KEY"},
		{"workers", "AP_WORKERS=0", "AP_WORKERS"},
		{"log level", "AP_LOG_LEVEL=loud", "AP_LOG_LEVEL"},
		{"production over http", "AP_ENV=production", "AP_PUBLIC_URL"},
		{"missing key file", "AP_SECRET_KEY_FILE=/nonexistent/secret.key", "AP_SECRET_KEY_FILE"},
		{"egress allow", "AP_EGRESS_ALLOW=10.0.0.0/8,intranet", `AP_EGRESS_ALLOW: "intranet" is not a CIDR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, environ(t.TempDir(), tc.setting), "", "serve")
			require.Equal(t, 1, r.code, r.String())
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout, "nothing may claim to be listening")
		})
	}
}

func TestSecretKeyFile(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	dir := t.TempDir()

	p := startServe(t, environ(dir, "AP_SECRET_KEY_FILE="+keyFile))
	code, body := get(t, p.URL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	p.stop()

	_, err := os.Stat(filepath.Join(dir, "secret.key"))
	require.ErrorIs(t, err, os.ErrNotExist, "a key from AP_SECRET_KEY_FILE must not be joined by a generated one")
}
