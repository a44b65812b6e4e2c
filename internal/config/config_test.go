package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/quota"
)

// envOf is a getenv over a map: the tests never read the process environment.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// newKey is a fresh base64 32-byte key.
func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(k)
}

// writeFile writes content to a new file in a temp dir and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "value")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Addr)
	require.Equal(t, "./data", c.DataDir)
	require.Empty(t, c.DatabaseURL)
	require.Equal(t, "development", c.Env)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, 2*runtime.NumCPU(), c.Workers, "AP_WORKERS: 2 × CPUs")
	require.Equal(t, DefaultMaxInflight(), c.MaxInflight)
	require.Equal(t, "open", c.Registration)
	require.Equal(t, 600, c.RateLimit)
	require.Equal(t, 10, c.LoginFailureLimit)
	require.Equal(t, 30*24*time.Hour, c.SessionTTL)
	require.Equal(t, 15*time.Second, c.CredentialScanInterval)
	require.Equal(t, 50, c.CredentialRefreshRate)
	require.Empty(t, c.OpenAIAPIKey)
	require.Empty(t, c.AnthropicAPIKey)
	require.Empty(t, c.TLSCert)
	require.False(t, c.NoWorker)
	require.False(t, c.Production())
	require.True(t, c.RegistrationOpen())
	require.Equal(t, 4<<20, c.ListPageBytes)

	require.NoError(t, c.Validate())
	require.Equal(t, "http://127.0.0.1:8080", c.PublicURL)
	require.Equal(t, "sqlite:"+filepath.Join("data", "agentplatform.db"), c.DatabaseDSN())
}

func TestFromEnvReadsEachVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		got         func(*Config) any
		want        any
	}{
		{"AP_ADDR", "0.0.0.0:9000", func(c *Config) any { return c.Addr }, "0.0.0.0:9000"},
		{"AP_DATA_DIR", "/var/lib/ap", func(c *Config) any { return c.DataDir }, "/var/lib/ap"},
		{"AP_DATABASE_URL", "postgres://u@db/ap", func(c *Config) any { return c.DatabaseURL }, "postgres://u@db/ap"},
		{"AP_PUBLIC_URL", "https://ap.example.com", func(c *Config) any { return c.PublicURL }, "https://ap.example.com"},
		{"AP_ENV", "production", func(c *Config) any { return c.Env }, "production"},
		{"AP_LOG_LEVEL", "debug", func(c *Config) any { return c.LogLevel }, "debug"},
		{"AP_SECRET_KEY", "a,b", func(c *Config) any { return c.secretKeyText }, "a,b"},
		{"AP_WORKERS", "7", func(c *Config) any { return c.Workers }, 7},
		{"AP_JS_CONCURRENCY", "3", func(c *Config) any { return c.Workers }, 3},
		{"AP_MAX_INFLIGHT", "20000", func(c *Config) any { return c.MaxInflight }, 20000},
		{"AP_REGISTRATION", "closed", func(c *Config) any { return c.Registration }, "closed"},
		{"AP_RATE_LIMIT", "60", func(c *Config) any { return c.RateLimit }, 60},
		{"AP_LOGIN_FAILURE_LIMIT", "3", func(c *Config) any { return c.LoginFailureLimit }, 3},
		{"AP_SESSION_TTL", "12h", func(c *Config) any { return c.SessionTTL }, 12 * time.Hour},
		{"AP_CREDENTIAL_SCAN_INTERVAL", "5s", func(c *Config) any { return c.CredentialScanInterval }, 5 * time.Second},
		{"AP_CREDENTIAL_REFRESH_RATE", "200", func(c *Config) any { return c.CredentialRefreshRate }, 200},
		{"AP_LIST_PAGE_BYTES", "65536", func(c *Config) any { return c.ListPageBytes }, 65536},
		{"AP_OPENAI_API_KEY", "sk-o", func(c *Config) any { return c.OpenAIAPIKey }, "sk-o"},
		{"AP_OPENAI_BASE_URL", "http://localhost:11434/v1", func(c *Config) any { return c.OpenAIBaseURL }, "http://localhost:11434/v1"},
		{"AP_ANTHROPIC_API_KEY", "sk-a", func(c *Config) any { return c.AnthropicAPIKey }, "sk-a"},
		{"AP_TLS_CERT", "/etc/ap/cert.pem", func(c *Config) any { return c.TLSCert }, "/etc/ap/cert.pem"},
		{"AP_TLS_KEY", "/etc/ap/key.pem", func(c *Config) any { return c.TLSKey }, "/etc/ap/key.pem"},
		{"AP_DEBUG_ADDR", "127.0.0.1:6060", func(c *Config) any { return c.DebugAddr }, "127.0.0.1:6060"},
		{"AP_EGRESS_ALLOW", "127.0.0.2/32", func(c *Config) any { return c.EgressAllow.String() }, "127.0.0.2/32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(envOf(map[string]string{tc.name: tc.value}))
			require.NoError(t, err)
			require.Equal(t, tc.want, tc.got(c))
		})
	}
}

func TestFromEnvFileVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		got  func(*Config) string
	}{
		{"AP_SECRET_KEY", func(c *Config) string { return c.secretKeyText }},
		{"AP_DATABASE_URL", func(c *Config) string { return c.DatabaseURL }},
		{"AP_OPENAI_API_KEY", func(c *Config) string { return c.OpenAIAPIKey }},
		{"AP_ANTHROPIC_API_KEY", func(c *Config) string { return c.AnthropicAPIKey }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Surrounding whitespace (the trailing newline of echo or a
			// mounted secret) is not part of the value; the file wins over
			// the plain variable.
			path := writeFile(t, "  from-file-value\n")
			c, err := FromEnv(envOf(map[string]string{tc.name: "from-env", tc.name + "_FILE": path}))
			require.NoError(t, err)
			require.Equal(t, "from-file-value", tc.got(c))

			_, err = FromEnv(envOf(map[string]string{tc.name + "_FILE": filepath.Join(t.TempDir(), "missing")}))
			require.ErrorContains(t, err, tc.name+"_FILE")
		})
	}
}

func TestFromEnvBadValuesAreNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, value string }{
		{"AP_WORKERS", "many"},
		{"AP_RATE_LIMIT", "abc"},
		{"AP_RATE_LIMIT", "1.5"},
		{"AP_LOGIN_FAILURE_LIMIT", "ten"},
		{"AP_SESSION_TTL", "forever"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			_, err := FromEnv(envOf(map[string]string{tc.name: tc.value}))
			require.ErrorContains(t, err, tc.name)
			require.ErrorContains(t, err, tc.value)
		})
	}

	// Every bad variable is reported at once, not one per restart.
	_, err := FromEnv(envOf(map[string]string{"AP_WORKERS": "x", "AP_RATE_LIMIT": "y"}))
	require.ErrorContains(t, err, "AP_WORKERS")
	require.ErrorContains(t, err, "AP_RATE_LIMIT")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		// wantErr names the variable in the error; empty means valid.
		wantErr string
		// publicURL is the derived public URL of a valid config.
		publicURL string
	}{
		{name: "defaults", publicURL: "http://127.0.0.1:8080"},
		{name: "public URL from addr", env: map[string]string{"AP_ADDR": "0.0.0.0:9000"}, publicURL: "http://0.0.0.0:9000"},
		{name: "trailing slash trimmed", env: map[string]string{"AP_PUBLIC_URL": "https://ap.example.com/"}, publicURL: "https://ap.example.com"},
		{name: "TLS makes the derived URL https", env: map[string]string{"AP_TLS_CERT": "c.pem", "AP_TLS_KEY": "k.pem"}, publicURL: "https://127.0.0.1:8080"},
		{name: "production with https", env: map[string]string{"AP_ENV": "production", "AP_PUBLIC_URL": "https://ap.example.com"}, publicURL: "https://ap.example.com"},
		{name: "production with TLS", env: map[string]string{"AP_ENV": "production", "AP_TLS_CERT": "c.pem", "AP_TLS_KEY": "k.pem"}, publicURL: "https://127.0.0.1:8080"},
		{name: "registration closed", env: map[string]string{"AP_REGISTRATION": "closed"}, publicURL: "http://127.0.0.1:8080"},

		{name: "production over http", env: map[string]string{"AP_ENV": "production"}, wantErr: "AP_PUBLIC_URL"},
		{name: "production with http public URL", env: map[string]string{"AP_ENV": "production", "AP_PUBLIC_URL": "http://ap.example.com"}, wantErr: "AP_PUBLIC_URL"},
		{name: "unknown env", env: map[string]string{"AP_ENV": "staging"}, wantErr: "AP_ENV"},
		{name: "unknown registration", env: map[string]string{"AP_REGISTRATION": "invite"}, wantErr: "AP_REGISTRATION"},
		{name: "zero workers", env: map[string]string{"AP_WORKERS": "0"}, wantErr: "AP_WORKERS"},
		{name: "too many workers", env: map[string]string{"AP_WORKERS": "1025"}, wantErr: "AP_WORKERS must be between 1 and 1024"},
		{name: "no JavaScript slot", env: map[string]string{"AP_JS_CONCURRENCY": "0"}, wantErr: "AP_JS_CONCURRENCY"},
		{name: "too many JavaScript slots", env: map[string]string{"AP_JS_CONCURRENCY": "1025"}, wantErr: "AP_JS_CONCURRENCY"},
		{name: "nothing in flight", env: map[string]string{"AP_MAX_INFLIGHT": "0"}, wantErr: "AP_MAX_INFLIGHT must be between 1 and 1000000"},
		{name: "too much in flight", env: map[string]string{"AP_MAX_INFLIGHT": "1000001"}, wantErr: "AP_MAX_INFLIGHT"},
		{name: "zero rate limit", env: map[string]string{"AP_RATE_LIMIT": "0"}, wantErr: "AP_RATE_LIMIT"},
		{name: "negative rate limit", env: map[string]string{"AP_RATE_LIMIT": "-5"}, wantErr: "AP_RATE_LIMIT"},
		{name: "zero login failures", env: map[string]string{"AP_LOGIN_FAILURE_LIMIT": "0"}, wantErr: "AP_LOGIN_FAILURE_LIMIT"},
		{name: "short session", env: map[string]string{"AP_SESSION_TTL": "30s"}, wantErr: "AP_SESSION_TTL"},
		{name: "scan too often", env: map[string]string{"AP_CREDENTIAL_SCAN_INTERVAL": "10ms"}, wantErr: "AP_CREDENTIAL_SCAN_INTERVAL"},
		{name: "no refreshes", env: map[string]string{"AP_CREDENTIAL_REFRESH_RATE": "0"}, wantErr: "AP_CREDENTIAL_REFRESH_RATE"},
		{name: "refresh rate too high", env: map[string]string{"AP_CREDENTIAL_REFRESH_RATE": "10001"}, wantErr: "AP_CREDENTIAL_REFRESH_RATE"},
		{name: "list page too small", env: map[string]string{"AP_LIST_PAGE_BYTES": "1023"}, wantErr: "AP_LIST_PAGE_BYTES must be between 1024 and 1073741824"},
		{name: "list page too large", env: map[string]string{"AP_LIST_PAGE_BYTES": "1073741825"}, wantErr: "AP_LIST_PAGE_BYTES"},
		{name: "cert without key", env: map[string]string{"AP_TLS_CERT": "c.pem"}, wantErr: "AP_TLS_KEY"},
		{name: "key without cert", env: map[string]string{"AP_TLS_KEY": "k.pem"}, wantErr: "AP_TLS_CERT"},
		{name: "unknown log level", env: map[string]string{"AP_LOG_LEVEL": "verbose"}, wantErr: "AP_LOG_LEVEL"},
		{name: "public URL not absolute", env: map[string]string{"AP_PUBLIC_URL": "ap.example.com"}, wantErr: "AP_PUBLIC_URL"},
		{name: "public URL not http", env: map[string]string{"AP_PUBLIC_URL": "ftp://ap.example.com"}, wantErr: "AP_PUBLIC_URL"},
		{name: "egress allow", env: map[string]string{"AP_EGRESS_ALLOW": "127.0.0.2/32, 10.0.0.0/8"}, publicURL: "http://127.0.0.1:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(envOf(tc.env))
			require.NoError(t, err)
			err = c.Validate()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.publicURL, c.PublicURL)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_ENV": "staging", "AP_REGISTRATION": "maybe", "AP_WORKERS": "0"}))
	require.NoError(t, err)
	err = c.Validate()
	for _, name := range []string{"AP_ENV", "AP_REGISTRATION", "AP_WORKERS"} {
		require.ErrorContains(t, err, name)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_ADDR": "127.0.0.1:1111", "AP_RATE_LIMIT": "10", "AP_WORKERS": "3"}))
	require.NoError(t, err)
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--addr", "127.0.0.1:2222", "--registration=closed", "--database-url", "sqlite:/tmp/x.db",
		"--egress-allow", "10.0.0.0/8"}))
	require.NoError(t, c.Validate())
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, []netip.Prefix(c.EgressAllow))
	require.Equal(t, "127.0.0.1:2222", c.Addr)
	require.Equal(t, "closed", c.Registration)
	require.Equal(t, "sqlite:/tmp/x.db", c.DatabaseDSN())
	require.Equal(t, 10, c.RateLimit, "a variable without a flag keeps its value")
	require.Equal(t, 3, c.Workers)
}

func TestDatabaseDSN(t *testing.T) {
	t.Parallel()
	c := &Config{DataDir: "/srv/ap"}
	require.Equal(t, "sqlite:/srv/ap/agentplatform.db", c.DatabaseDSN())
	c.DatabaseURL = "postgres://ap@db/ap"
	require.Equal(t, "postgres://ap@db/ap", c.DatabaseDSN())
}

func TestParseSecretKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 16))
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 33))
	for _, tc := range []struct {
		name, text string
		want       []string // the keys, base64, in order
		wantErr    string
	}{
		{name: "one key", text: k1, want: []string{k1}},
		{name: "rotation: the first encrypts, all decrypt", text: k1 + "," + k2, want: []string{k1, k2}},
		{name: "spaces and empty parts", text: " " + k2 + " ,, " + k1 + " ,", want: []string{k2, k1}},
		{name: "not base64", text: "notbase64", wantErr: "AP_SECRET_KEY: key 1"},
		{name: "16-byte key", text: short, wantErr: "AP_SECRET_KEY: key 1 is not a base64-encoded 32-byte key"},
		{name: "33-byte key", text: long, wantErr: "32-byte"},
		{name: "second key bad", text: k1 + "," + short, wantErr: "key 2"},
		{name: "url-safe alphabet refused", text: strings.NewReplacer("+", "-", "/", "_").Replace(k1 + "+/"), wantErr: "AP_SECRET_KEY"},
		{name: "empty", text: "", wantErr: "no key given"},
		{name: "only commas", text: " , ,", wantErr: "no key given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, err := ParseSecretKeys(tc.text)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, keys)
				return
			}
			require.NoError(t, err)
			require.Len(t, keys, len(tc.want))
			for i, k := range keys {
				require.Len(t, k, 32)
				require.Equal(t, tc.want[i], base64.StdEncoding.EncodeToString(k))
			}
		})
	}
}

func TestLoadSecretKeysGeneratesOnce(t *testing.T) {
	t.Parallel()
	// The data dir does not exist yet: the first start creates it.
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "secret.key")

	first := &Config{DataDir: dir}
	require.NoError(t, first.LoadSecretKeys())
	require.Len(t, first.SecretKeys, 1)
	require.Len(t, first.SecretKeys[0], 32)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	written, err := os.ReadFile(path)
	require.NoError(t, err)

	// The next start reads the same key back and leaves the file alone.
	second := &Config{DataDir: dir}
	require.NoError(t, second.LoadSecretKeys())
	require.Equal(t, first.SecretKeys, second.SecretKeys)
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, written, again)
}

func TestLoadSecretKeysReadsExistingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1, k2 := newKey(t), newKey(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.key"), []byte(k1+","+k2+"\n"), 0o600))
	c := &Config{DataDir: dir}
	require.NoError(t, c.LoadSecretKeys())
	require.Len(t, c.SecretKeys, 2)
	require.Equal(t, k1, base64.StdEncoding.EncodeToString(c.SecretKeys[0]))
}

func TestLoadSecretKeysRefusesBadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "secret.key")
	require.NoError(t, os.WriteFile(path, []byte("garbage\n"), 0o600))
	c := &Config{DataDir: dir}
	err := c.LoadSecretKeys()
	require.ErrorContains(t, err, "32-byte key")
	require.ErrorContains(t, err, path, "the error names the file the operator must fix")
}

func TestLoadSecretKeysFromEnvironment(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	keyFile := writeFile(t, k1+","+k2+"\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"AP_SECRET_KEY", map[string]string{"AP_SECRET_KEY": k1 + "," + k2}},
		{"AP_SECRET_KEY_FILE", map[string]string{"AP_SECRET_KEY_FILE": keyFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.env["AP_DATA_DIR"] = dir
			c, err := FromEnv(envOf(tc.env))
			require.NoError(t, err)
			require.NoError(t, c.LoadSecretKeys())
			require.Len(t, c.SecretKeys, 2)
			require.Equal(t, k1, base64.StdEncoding.EncodeToString(c.SecretKeys[0]), "the first key encrypts")
			require.Equal(t, k2, base64.StdEncoding.EncodeToString(c.SecretKeys[1]))
			_, err = os.Stat(filepath.Join(dir, "secret.key"))
			require.ErrorIs(t, err, os.ErrNotExist, "a configured key is never joined by a generated one")
		})
	}

	c, err := FromEnv(envOf(map[string]string{"AP_SECRET_KEY": "notbase64", "AP_DATA_DIR": t.TempDir()}))
	require.NoError(t, err)
	require.ErrorContains(t, c.LoadSecretKeys(), "AP_SECRET_KEY")
}

// TestLoadSecretKeysConcurrentFirstStart is two (here many) processes
// sharing a fresh data dir and starting at once: exactly one key is
// generated and every one of them uses it.
func TestLoadSecretKeysConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	for range 50 {
		dir := t.TempDir()
		const n = 8
		configs := make([]*Config, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			configs[i] = &Config{DataDir: dir}
			wg.Go(func() { errs[i] = configs[i].LoadSecretKeys() })
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, configs[0].SecretKeys, configs[i].SecretKeys)
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "only secret.key is left in the data dir")
	}
}

// TestQuotas: AP_QUOTA_* default to DESIGN's values, are read, and a
// non-integer or a value below 1 is named.
func TestQuotas(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, quota.Defaults(), c.Quotas)
	require.Equal(t, int64(100<<20), c.Quotas.StorageBytes)
	c, err = FromEnv(envOf(map[string]string{"AP_QUOTA_STORAGE_KEYS": "7", "AP_QUOTA_RECORD_BYTES": "5000000000"}))
	require.NoError(t, err)
	require.Equal(t, int64(7), c.Quotas.StorageKeys)
	require.Equal(t, int64(5_000_000_000), c.Quotas.RecordBytes)
	_, err = FromEnv(envOf(map[string]string{"AP_QUOTA_MODELS": "many"}))
	require.ErrorContains(t, err, `AP_QUOTA_MODELS: not an integer: "many"`)
	c, err = FromEnv(envOf(map[string]string{"AP_QUOTA_PIPELINE_STEPS": "0"}))
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), "AP_QUOTA_PIPELINE_STEPS must be at least 1")
}

// TestWorkersAndInflight: AP_WORKERS (the CPU slots) wins over its older
// name AP_JS_CONCURRENCY, and so do the flags; the in-flight bound is sized
// from memory, and so is the bound on the JavaScript VMs alive at once,
// never below the CPU slots.
func TestWorkersAndInflight(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_JS_CONCURRENCY": "3", "AP_WORKERS": "5"}))
	require.NoError(t, err)
	require.Equal(t, 5, c.Workers)

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--js-concurrency", "7", "--max-inflight", "2000"}))
	require.NoError(t, c.Validate())
	require.Equal(t, 7, c.Workers)
	require.Equal(t, 2000, c.MaxInflight)
	require.Error(t, fs.Parse([]string{"--workers", "many"}))

	if Memory() > 0 {
		require.Equal(t, int(min(max(Memory()/inflightBytes, 16), MaxInflightLimit)), DefaultMaxInflight())
		require.Equal(t, max(7, int(Memory()/2/(int64(c.JSMemoryMB)<<20))), c.JSLive())
	}
	c.Workers = 1024
	require.GreaterOrEqual(t, c.JSLive(), 1024, "a VM for every CPU slot")
}

// The soft memory limit follows a container's limit, never overrides
// GOMEMLIMIT, and is none on a machine without one.
func TestSoftMemoryLimit(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(900<<20), softMemoryLimit("", 1000<<20), "90 % of the cgroup's")
	require.Zero(t, softMemoryLimit("2GiB", 1000<<20), "GOMEMLIMIT decides")
	require.Zero(t, softMemoryLimit("", 0), "no cgroup limit")
}
