// Package config owns the platform's settings: one typed Config read from the
// environment (DESIGN §3), overridable by command-line flags that mirror the
// variables, validated once, and passed down explicitly. There are no globals.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/quota"
)

// Config is every setting of a platform process.
type Config struct {
	Addr        string // AP_ADDR
	DataDir     string // AP_DATA_DIR
	DatabaseURL string // AP_DATABASE_URL; empty means a SQLite file in DataDir
	PublicURL   string // AP_PUBLIC_URL; empty means http://Addr
	Env         string // AP_ENV: development or production
	LogLevel    string // AP_LOG_LEVEL: debug, info, warn, error

	// SecretKeys are the AES-256 keys for third-party secrets; the first
	// encrypts, all decrypt. Filled by LoadSecretKeys.
	SecretKeys [][]byte
	// secretKeyText is AP_SECRET_KEY (or the content of AP_SECRET_KEY_FILE).
	secretKeyText string

	// Workers is AP_WORKERS (AP_JS_CONCURRENCY, its older name, when it
	// is unset): the runs one process executes CPU-bound work for at once
	// (JavaScript), shared fairly between users; a run waiting on a host
	// call gives its slot back. Default DefaultWorkers().
	Workers int
	// workersVar names the variable Workers came from, for its error.
	workersVar string
	// MaxInflight is AP_MAX_INFLIGHT: the activations one worker process
	// holds at once (claimed here and not ended), most of them waiting on
	// an LLM, a tool or a webhook agent, which holds no CPU slot. Default
	// DefaultMaxInflight().
	MaxInflight int

	JSMemoryMB   int    // AP_JS_MEMORY_MB, the memory ceiling of one JavaScript run
	Registration string // AP_REGISTRATION: open or closed
	RateLimit    int    // AP_RATE_LIMIT, requests per minute per caller
	// LoginFailureLimit is how many failed logins per minute one IP may make.
	LoginFailureLimit int           // AP_LOGIN_FAILURE_LIMIT
	SessionTTL        time.Duration // AP_SESSION_TTL
	// CredentialScanInterval is how often the background refresher looks
	// for OAuth tokens due for a refresh (AP_CREDENTIAL_SCAN_INTERVAL).
	CredentialScanInterval time.Duration
	// CredentialRefreshRate bounds the background refreshes one worker
	// process starts per second (AP_CREDENTIAL_REFRESH_RATE).
	CredentialRefreshRate int

	OpenAIAPIKey    string // AP_OPENAI_API_KEY
	OpenAIBaseURL   string // AP_OPENAI_BASE_URL
	AnthropicAPIKey string // AP_ANTHROPIC_API_KEY

	TLSCert string // AP_TLS_CERT
	TLSKey  string // AP_TLS_KEY

	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client of per-address limits and logs (AP_TRUSTED_PROXIES).
	TrustedProxies CIDRs
	// CORSOrigins may call the API from a browser with a Bearer token
	// (AP_CORS_ORIGINS).
	CORSOrigins Origins

	// DebugAddr, when set, serves net/http/pprof there (AP_DEBUG_ADDR):
	// profiles of a live server, on an address kept off the public one.
	DebugAddr string

	// NoWorker makes serve run the API only (serve --no-worker).
	NoWorker bool

	// EgressAllow is AP_EGRESS_ALLOW: the networks that outbound calls to
	// user-supplied addresses may reach although they are private.
	EgressAllow CIDRs

	// Quotas are the per-user and per-app quotas (AP_QUOTA_*), with
	// defaults a normal app never meets.
	Quotas quota.Limits
	// ListPageBytes bounds the items of one list page and of one batch of
	// a WebSocket replay, in bytes as stored (AP_LIST_PAGE_BYTES): a page
	// of large items holds fewer than limit, with has_more.
	ListPageBytes int
}

// DefaultWorkers is AP_WORKERS unset: 2 × CPUs (DESIGN), so that the
// cores stay busy while a run's code starts or ends a host call, and the
// API keeps its share of them.
func DefaultWorkers() int { return 2 * runtime.NumCPU() }

// MaxWorkers is the most AP_WORKERS may be.
const MaxWorkers = 1024

// inflightBytes is the memory a run in flight is allowed for the default
// in-flight bound: a waiting LLM run holds tens of KiB (its request, its
// goroutines, its connection; an answer is capped at 4 MiB), so the
// default leaves most of the memory to the rest.
const inflightBytes = 5 << 19 // 2.5 MiB

// DefaultMaxInflight is AP_MAX_INFLIGHT unset: the memory this process may
// use (its cgroup's limit, else the machine's) at 2.5 MiB a run, about
// 10,000 on 24 GiB; 1,000 when the memory cannot be read.
func DefaultMaxInflight() int {
	m := Memory()
	if m <= 0 {
		return 1000
	}
	return int(min(max(m/inflightBytes, 16), MaxInflightLimit))
}

// DefaultListPageBytes is AP_LIST_PAGE_BYTES unset: 4 MiB, a few items at
// the largest output plus error, hundreds of ordinary ones.
const DefaultListPageBytes = 4 << 20

// Production reports whether AP_ENV=production.
func (c *Config) Production() bool { return c.Env == "production" }

// RegistrationOpen reports whether self-registration is allowed.
func (c *Config) RegistrationOpen() bool { return c.Registration != "closed" }

// MaxInflightLimit is the most AP_MAX_INFLIGHT may be: a million waiting
// runs is past what any one process's memory holds.
const MaxInflightLimit = 1_000_000

// FromEnv reads the configuration from getenv (os.Getenv in main, a map in
// tests). _FILE variants of secrets are read here.
func FromEnv(getenv func(string) string) (*Config, error) {
	c := &Config{
		Addr:                   "127.0.0.1:8080",
		DataDir:                "./data",
		Env:                    "development",
		LogLevel:               "info",
		Workers:                DefaultWorkers(),
		workersVar:             "AP_WORKERS",
		MaxInflight:            DefaultMaxInflight(),
		JSMemoryMB:             64,
		Registration:           "open",
		RateLimit:              600,
		LoginFailureLimit:      10,
		SessionTTL:             30 * 24 * time.Hour,
		CredentialScanInterval: 15 * time.Second,
		CredentialRefreshRate:  50,
		Quotas:                 quota.Defaults(),
		ListPageBytes:          DefaultListPageBytes,
	}
	var errs []error
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	secret := func(name string, dst *string) {
		str(name, dst)
		if path := getenv(name + "_FILE"); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s_FILE: %w", name, err))
				return
			}
			*dst = strings.TrimSpace(string(b))
		}
	}
	list := func(name string, dst flag.Value) {
		if v := getenv(name); v != "" {
			if err := dst.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	integer := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: not an integer: %q", name, v))
				return
			}
			*dst = n
		}
	}
	str("AP_ADDR", &c.Addr)
	str("AP_DATA_DIR", &c.DataDir)
	secret("AP_DATABASE_URL", &c.DatabaseURL)
	str("AP_PUBLIC_URL", &c.PublicURL)
	str("AP_ENV", &c.Env)
	str("AP_LOG_LEVEL", &c.LogLevel)
	secret("AP_SECRET_KEY", &c.secretKeyText)
	for _, name := range []string{"AP_JS_CONCURRENCY", "AP_WORKERS"} {
		if getenv(name) != "" {
			integer(name, &c.Workers)
			c.workersVar = name
		}
	}
	integer("AP_MAX_INFLIGHT", &c.MaxInflight)
	integer("AP_JS_MEMORY_MB", &c.JSMemoryMB)
	str("AP_REGISTRATION", &c.Registration)
	integer("AP_RATE_LIMIT", &c.RateLimit)
	integer("AP_LOGIN_FAILURE_LIMIT", &c.LoginFailureLimit)
	integer("AP_CREDENTIAL_REFRESH_RATE", &c.CredentialRefreshRate)
	integer("AP_LIST_PAGE_BYTES", &c.ListPageBytes)
	duration := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = d
		}
	}
	duration("AP_SESSION_TTL", &c.SessionTTL)
	duration("AP_CREDENTIAL_SCAN_INTERVAL", &c.CredentialScanInterval)
	secret("AP_OPENAI_API_KEY", &c.OpenAIAPIKey)
	str("AP_OPENAI_BASE_URL", &c.OpenAIBaseURL)
	secret("AP_ANTHROPIC_API_KEY", &c.AnthropicAPIKey)
	str("AP_TLS_CERT", &c.TLSCert)
	str("AP_TLS_KEY", &c.TLSKey)
	str("AP_DEBUG_ADDR", &c.DebugAddr)
	list("AP_TRUSTED_PROXIES", &c.TrustedProxies)
	list("AP_CORS_ORIGINS", &c.CORSOrigins)
	list("AP_EGRESS_ALLOW", &c.EgressAllow)
	for _, q := range c.Quotas.Settings() {
		if v := getenv(q.Quota.Env); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: not an integer: %q", q.Quota.Env, v))
				continue
			}
			*q.Limit = n
		}
	}
	return c, errors.Join(errs...)
}

// BindFlags registers flags that mirror the environment variables, with the
// current values as defaults, so a flag overrides its variable.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (AP_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory of the embedded mode's files (AP_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "postgres://… or sqlite:PATH (AP_DATABASE_URL)")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "external origin (AP_PUBLIC_URL)")
	fs.StringVar(&c.Env, "env", c.Env, "development or production (AP_ENV)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (AP_LOG_LEVEL)")
	fs.Var(workersFlag{c}, "workers", "runs executing CPU-bound work (JavaScript) at once per process (AP_WORKERS)")
	fs.IntVar(&c.MaxInflight, "max-inflight", c.MaxInflight,
		"activations in flight per worker process, most of them waiting on an LLM, a tool or a webhook agent (AP_MAX_INFLIGHT)")
	fs.IntVar(&c.JSMemoryMB, "js-memory-mb", c.JSMemoryMB, "memory ceiling of one JavaScript run, MB (AP_JS_MEMORY_MB)")
	fs.StringVar(&c.Registration, "registration", c.Registration, "open or closed (AP_REGISTRATION)")
	fs.IntVar(&c.RateLimit, "rate-limit", c.RateLimit, "requests per minute per caller (AP_RATE_LIMIT)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "certificate file for HTTPS (AP_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "key file for HTTPS (AP_TLS_KEY)")
	fs.IntVar(&c.LoginFailureLimit, "login-failure-limit", c.LoginFailureLimit, "failed logins per minute per client address (AP_LOGIN_FAILURE_LIMIT)")
	fs.Var(&c.TrustedProxies, "trusted-proxies", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (AP_TRUSTED_PROXIES)")
	fs.Var(&c.CORSOrigins, "cors-origins", "comma-separated origins allowed to call the API from a browser with a Bearer token (AP_CORS_ORIGINS)")
	fs.Var(&c.EgressAllow, "egress-allow",
		"comma-separated CIDRs that calls to user-supplied URLs may reach although private (AP_EGRESS_ALLOW)")
	fs.Var(workersFlag{c}, "js-concurrency", "the older name of --workers (AP_JS_CONCURRENCY)")
}

// Validate checks the settings and fills the derived defaults (public URL).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Env != "development" && c.Env != "production" {
		bad("AP_ENV must be development or production, not %q", c.Env)
	}
	if c.Registration != "open" && c.Registration != "closed" {
		bad("AP_REGISTRATION must be open or closed, not %q", c.Registration)
	}
	if c.JSMemoryMB < 4 || c.JSMemoryMB > 4096 {
		bad("AP_JS_MEMORY_MB must be between 4 and 4096")
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		bad("%s must be between 1 and %d", c.workersVar, MaxWorkers)
	}
	if c.MaxInflight < 1 || c.MaxInflight > MaxInflightLimit {
		bad("AP_MAX_INFLIGHT must be between 1 and %d", MaxInflightLimit)
	}
	if c.RateLimit < 1 {
		bad("AP_RATE_LIMIT must be at least 1")
	}
	if c.LoginFailureLimit < 1 {
		bad("AP_LOGIN_FAILURE_LIMIT must be at least 1")
	}
	if c.SessionTTL < time.Minute {
		bad("AP_SESSION_TTL must be at least 1m")
	}
	if c.CredentialScanInterval < 100*time.Millisecond || c.CredentialScanInterval > time.Minute {
		bad("AP_CREDENTIAL_SCAN_INTERVAL must be between 100ms and 1m")
	}
	if c.CredentialRefreshRate < 1 || c.CredentialRefreshRate > 10000 {
		bad("AP_CREDENTIAL_REFRESH_RATE must be between 1 and 10000")
	}
	for _, q := range c.Quotas.Settings() {
		if *q.Limit < 1 {
			bad("%s must be at least 1", q.Quota.Env)
		}
	}
	if c.ListPageBytes < 1<<10 || c.ListPageBytes > 1<<30 {
		bad("AP_LIST_PAGE_BYTES must be between 1024 and 1073741824")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("AP_TLS_CERT and AP_TLS_KEY go together")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("AP_LOG_LEVEL must be debug, info, warn or error, not %q", c.LogLevel)
	}
	if c.PublicURL == "" {
		scheme := "http"
		if c.TLSCert != "" {
			scheme = "https"
		}
		c.PublicURL = scheme + "://" + c.Addr
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	u, err := url.Parse(c.PublicURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		bad("AP_PUBLIC_URL must be an absolute http(s) URL, not %q", c.PublicURL)
	} else if c.Production() && u.Scheme != "https" {
		bad("AP_PUBLIC_URL must be https in production")
	}
	return errors.Join(errs...)
}

// DatabaseDSN is the database to open: AP_DATABASE_URL, or the SQLite file
// in the data directory.
func (c *Config) DatabaseDSN() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return "sqlite:" + filepath.Join(c.DataDir, "agentplatform.db")
}

// LoadSecretKeys fills SecretKeys from AP_SECRET_KEY, or from
// DataDir/secret.key, generating that file (mode 0600) on first start.
func (c *Config) LoadSecretKeys() error {
	text, from := c.secretKeyText, "" // from: the data dir key file, if used
	if text == "" {
		path := filepath.Join(c.DataDir, "secret.key")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			text = strings.TrimSpace(string(b))
		case errors.Is(err, os.ErrNotExist):
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return err
			}
			text = base64.StdEncoding.EncodeToString(key)
			if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
				return fmt.Errorf("create data dir: %w", err)
			}
			if err := createFile(path, text+"\n"); err != nil {
				if errors.Is(err, os.ErrExist) {
					// Another process starting at once won: use its key.
					return c.LoadSecretKeys()
				}
				return fmt.Errorf("write %s: %w", path, err)
			}
		default:
			return fmt.Errorf("read %s: %w", path, err)
		}
		from = path
	}
	keys, err := ParseSecretKeys(text)
	if err != nil {
		if from != "" {
			return fmt.Errorf("%s: %w", from, err)
		}
		return err
	}
	c.SecretKeys = keys
	return nil
}

// createFile writes a new 0600 file at path, whole or not at all: the
// content goes to a temporary file that is then hard-linked into place, so a
// process starting at the same time never reads a half-written key, and an
// existing file is never replaced (the error is then os.ErrExist).
func createFile(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// ParseSecretKeys parses comma-separated base64 32-byte keys.
func ParseSecretKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for i, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(part)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("AP_SECRET_KEY: key %d is not a base64-encoded 32-byte key", i+1)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("AP_SECRET_KEY: no key given")
	}
	return keys, nil
}

// workersFlag is --workers and its older name --js-concurrency: either
// sets Workers, and its errors name AP_WORKERS.
type workersFlag struct{ c *Config }

func (f workersFlag) String() string {
	if f.c == nil {
		return ""
	}
	return strconv.Itoa(f.c.Workers)
}

func (f workersFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("not an integer: %q", v)
	}
	f.c.Workers, f.c.workersVar = n, "AP_WORKERS"
	return nil
}
