// Package server wires a platform process together: it opens and migrates
// the store, builds the domain services, the queue and the HTTP API, and runs
// them until the context ends, then drains: stop accepting connections,
// finish in-flight requests and running jobs (or hand them back to the
// queue), close the database.
package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/authenticator"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/lifecycle"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/router"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
	"github.com/agentplatform/agentplatform/internal/tool"
	"github.com/agentplatform/agentplatform/internal/usage"
	"github.com/agentplatform/agentplatform/internal/web"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// DrainTimeout bounds the graceful part of a shutdown.
const DrainTimeout = 30 * time.Second

// Options are what a process runs.
type Options struct {
	// HTTP serves the API (serve); false for the worker command.
	HTTP bool
	// Password overrides argon2id costs (tests only).
	Password auth.PasswordParams
	// MaxConnectionsPerUser caps a user's WebSocket and SSE connections on
	// this node; 0: auth.DefaultMaxConnections.
	MaxConnectionsPerUser int
	// HeartbeatEvery and DeadAfter shorten the worker heartbeat and the
	// silence after which a worker is dead, so that tests of recovery take
	// seconds (tests only; zero: 10 s and 30 s).
	HeartbeatEvery, DeadAfter time.Duration
}

// Server is one platform process.
type Server struct {
	Config  *config.Config
	Log     *slog.Logger
	Store   *store.Store
	Secrets *secret.Box
	Auth    *auth.Service
	Queue   *queue.Queue
	Events  *events.Bus
	// Activations is the activation core.
	Activations *activation.Service
	API         *api.API
	// handler is the router: the API and the pages behind one middleware.
	handler http.Handler
	Metrics *metrics.Metrics
	Apps    *apps.Service
	LLM     *llm.Service
	opts    Options
	ln      net.Listener
	close   sync.Once
	// started is what Start started, for Stop.
	started *lifecycle.Sequence
	// wrapService, when set, wraps every service (tests watch them).
	wrapService func(name string, svc lifecycle.Service) lifecycle.Service

	// Pipelines runs apps' pipelines step by step.
	Pipelines *pipeline.Service
	// Functions runs apps' functions and records their executions.
	Functions *function.Service
	// Authenticators are apps' OAuth client registrations.
	Authenticators *authenticator.Service
	// Usage reports the usage ledger and keeps budgets.
	Usage *usage.Service
	// Data is apps' data models and records.
	Data *appdata.Service
	// Credentials is users' OAuth connections and their tokens.
	Credentials *credential.Service
	// Executors run agents, functions and pipeline steps.
	Executors executor.Registry
	// Webhooks delivers activation events to webhook URLs.
	Webhooks *webhook.Service
	// Egress guards every call to an address a user supplied.
	Egress *egress.Guard
	// Tracing exports traces when the OTEL_* variables ask for it (nil:
	// tracing off).
	Tracing *telemetry.Tracing
}

// Close closes the database; Run calls it on the way out, tests that never
// Run call it themselves.
func (s *Server) Close() {
	s.close.Do(func() {
		if s.Events != nil {
			s.Events.Stop()
		}
		if s.Auth != nil {
			s.Auth.Close()
		}
		if s.API != nil {
			s.API.Close()
		}
		s.Store.Close()
		// Tests that never Run stop the exporter here (Run's sequence
		// stopped it already otherwise: a second stop does nothing).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Tracing.Stop(ctx)
	})
}

// New opens the database, applies migrations and builds every service.
// cfg must have been validated.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts Options) (*Server, error) {
	if err := cfg.LoadSecretKeys(); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseDSN())
	if err != nil {
		return nil, err
	}
	st.SetPageBytes(cfg.ListPageBytes)
	s := &Server{Config: cfg, Log: log, Store: st, Metrics: metrics.New(), opts: opts}
	if err := st.Exclusive(); err != nil {
		st.Close()
		return nil, err
	}
	// Tracing first: the HTTP handler, the outbound clients and the
	// queue built next are wrapped only when it is on.
	if s.Tracing, err = telemetry.Setup(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := s.build(ctx); err != nil {
		st.Close()
		_ = s.Tracing.Stop(ctx)
		return nil, err
	}
	return s, nil
}

func (s *Server) build(ctx context.Context) error {
	if err := s.Store.Migrate(ctx, s.Log); err != nil {
		return err
	}
	var err error
	if s.Secrets, err = openSecrets(ctx, s.Config, s.Store); err != nil {
		return err
	}
	s.Auth, err = auth.New(s.Store, s.Log, auth.Options{
		SessionTTL: s.Config.SessionTTL, RegistrationOpen: s.Config.RegistrationOpen(), Password: s.opts.Password,
		MaxConnections: s.opts.MaxConnectionsPerUser, Quotas: s.Config.Quotas, ReturnHashMemory: true,
	})
	if err != nil {
		return err
	}
	s.Egress = egress.New(s.Config.EgressAllow)
	// As many runs may wait on one host (an LLM provider, a webhook
	// agent) as the process holds in flight: its clients keep as many
	// connections.
	s.Egress.IdleConns = s.Config.MaxInflight
	s.Apps = apps.New(s.Store, s.Auth, s.Secrets, s.Egress, apps.Options{PublicURL: s.Config.PublicURL, Production: s.Config.Production(),
		Quotas: s.Config.Quotas})
	if err := s.Apps.SeedSystemAgents(ctx); err != nil {
		return fmt.Errorf("seed system agents: %w", err)
	}
	// A transactional insert does not wake River's producer without
	// LISTEN/NOTIFY, so new jobs are found by polling, and each poll is a
	// write transaction. New activations are no River jobs: workers take
	// them from the table (activation/dispatch.go); the activations queue
	// holds only runs resumed by an answer, which can wait 200 ms, as can
	// deliveries, refreshes and the housekeeping. At 25 ms the activations
	// queue alone was 40 polls a second on each worker node. The cooldown
	// batches fetches under load.
	poll, cooldown := 200*time.Millisecond, 25*time.Millisecond
	if !s.Store.MultiNode() {
		cooldown = 10 * time.Millisecond
	}
	// One name for this process in the workers table and in River's
	// attempted_by: the reaper hands back a dead worker's River jobs too.
	workerID := uuid.Must(uuid.NewV7()).String()
	s.Queue = queue.New(s.Store, s.Log, queue.Options{RunWorkers: !s.Config.NoWorker, Workers: s.Config.MaxInflight,
		FetchPollInterval: poll, BackgroundPollInterval: poll, FetchCooldown: cooldown, ClientID: workerID,
		Middleware: telemetry.JobMiddleware()})
	s.Queue.AddMaintenance(s.Auth)
	s.Events = events.New(s.Store, s.Log)
	s.Events.AddJobs(s.Queue)
	// A credential ended on one node ends the connections it opened on all.
	s.Auth.SetBroadcast(func(userID string) { s.Events.Broadcast(auth.ChangeTopic, userID) })
	s.Events.Handle(auth.ChangeTopic, s.Auth.ChangedElsewhere)
	s.Webhooks = webhook.New(s.Store, s.Secrets, s.Auth, s.Queue, s.Log, webhook.Options{Egress: s.Egress, Metrics: s.Metrics})
	s.LLM, err = llm.NewService(s.Store, s.Secrets, s.Auth, llm.Options{
		OpenAIAPIKey: s.Config.OpenAIAPIKey, OpenAIBaseURL: s.Config.OpenAIBaseURL, AnthropicAPIKey: s.Config.AnthropicAPIKey,
		Egress: s.Egress, Metrics: s.Metrics, IdleConns: s.Config.MaxInflight})
	if err != nil {
		return err
	}
	s.Data = appdata.New(s.Store)
	s.Data.Quotas = s.Config.Quotas
	s.Credentials = credential.New(s.Store, s.Secrets, s.Events, s.Log, credential.Options{Apps: s.Apps, Egress: s.Egress,
		PublicURL: s.Config.PublicURL, ScanInterval: s.Config.CredentialScanInterval,
		RefreshRate: s.Config.CredentialRefreshRate})
	s.Credentials.AddJobs(s.Queue)
	s.Usage = usage.New(s.Store, s.Auth, s.Events)
	s.Usage.AddJobs(s.Queue)
	llmExec := runtimes.NewLLM(s.LLM.Resolve, s.Store, s.Log)
	llmExec.Budgets = s.Usage // asked before every LLM call of a run
	js := runtimes.NewJavaScript(s.Store, s.Egress, llmExec, s.Config.JSMemoryMB)
	js.Quotas = s.Config.Quotas
	js.Slots = fairshare.Shared(s.Config.Workers)
	js.Live = fairshare.Shared(s.Config.JSLive())
	js.Data = appdata.Scripts{Service: s.Data}
	js.Credentials = credential.Scripts{Service: s.Credentials}
	s.Executors = executor.NewRegistry(llmExec, js,
		runtimes.NewWebhook(s.Egress, s.Config.PublicURL+"/api/v1", s.Apps.WebhookSecret))
	s.Functions = function.New(s.Store, s.Auth, s.Apps, js)
	s.Functions.Budgets = s.Usage
	s.Authenticators = authenticator.New(s.Store, s.Auth, s.Apps, s.Secrets)
	// An authenticator's connections are revoked at the provider before it
	// goes (the rows would go with it anyway).
	s.Authenticators.OnDelete = s.Credentials.RevokeAll
	s.Activations = activation.New(activation.Deps{
		Store: s.Store, Auth: s.Auth, Queue: s.Queue, Log: s.Log, Events: s.Events, Nodes: s.Events, Webhooks: s.Webhooks, Metrics: s.Metrics,
		Agents: s.Apps, Executors: s.Executors, Budgets: s.Usage,
	}, activation.Options{WorkerID: workerID, Concurrency: s.Config.MaxInflight, HeartbeatEvery: s.opts.HeartbeatEvery, DeadAfter: s.opts.DeadAfter})
	// An activation queued on one node wakes the workers of all.
	s.Events.Handle(activation.QueuedTopic, s.Activations.QueuedElsewhere)
	// An LLM agent's tools run functions, other agents (child activations),
	// HTTP calls and remote MCP servers' tools through the egress guard.
	llmExec.Tools = &tool.Kit{Store: s.Store, Functions: s.Functions, Agents: s.Activations,
		HTTP:        s.Egress.Client(egress.Options{Field: "url"}),
		MCPHTTP:     s.Egress.Client(egress.Options{Field: "url", MaxBody: tool.MaxMCPBody}),
		Credentials: credential.Tools{Service: s.Credentials}}
	s.Pipelines = pipeline.New(s.Store, s.Auth, s.Apps, s.Activations, s.Functions, s.Events, s.Queue, s.Log)
	s.Pipelines.Quotas = s.Config.Quotas
	s.Pipelines.Budgets = s.Usage
	// A pipeline's agent step moves its run on when its activation ends.
	s.Activations.EndHooks = append(s.Activations.EndHooks, s.Pipelines.EndHook())
	// A dead worker's pipeline steps come back with its activations.
	s.Activations.DeadWorkerHooks = append(s.Activations.DeadWorkerHooks, s.Pipelines.RecoverWorker)
	s.Metrics.QueueDepth(func() (int, int, error) { return s.Store.ActivationDepth(context.Background()) })
	if s.opts.HTTP {
		mux := http.NewServeMux()
		s.API, err = api.New(api.Deps{Config: s.Config, Log: s.Log, Store: s.Store, Secrets: s.Secrets, Auth: s.Auth,
			Activations: s.Activations, Events: s.Events, Metrics: s.Metrics, Apps: s.Apps, Data: s.Data, Functions: s.Functions, Pipelines: s.Pipelines,
			Credentials: s.Credentials, Webhooks: s.Webhooks, LLM: s.LLM, Authenticators: s.Authenticators, Usage: s.Usage, Mux: mux})
		if err != nil {
			return err
		}
		pages, err := web.New(web.Deps{Log: s.Log, Auth: s.Auth, Apps: s.Apps,
			Data: s.Data, Authenticators: s.Authenticators, Credentials: s.Credentials,
			Activations: s.Activations, Functions: s.Functions, Usage: s.Usage,
			// The app page lists an MCP server's tools as runs see them.
			PublicURL: s.Config.PublicURL, MCPTools: llmExec.Tools})
		if err != nil {
			return err
		}
		s.handler, err = router.New(router.Deps{Config: s.Config, Log: s.Log, Metrics: s.Metrics, Mux: mux, Auth: s.Auth, API: s.API, Pages: pages})
		if err != nil {
			return err
		}
	}
	return nil
}

// openSecrets builds the secret box and refuses to start when a stored
// secret was sealed with a key that is not configured: better a loud stop
// now than providers and connections failing one by one later.
func openSecrets(ctx context.Context, cfg *config.Config, st *store.Store) (*secret.Box, error) {
	box, err := secret.New(cfg.SecretKeys)
	if err != nil {
		return nil, err
	}
	ids, err := st.SecretKeyIDsInUse(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !box.CanOpen(id) {
			return nil, fmt.Errorf("stored secrets were encrypted with key %s, which is not in AP_SECRET_KEY (or %s/secret.key): "+
				"configure that key (new keys go first, old ones after a comma)", id, cfg.DataDir)
		}
	}
	return box, nil
}

// Listen binds the HTTP address (before Run, so that callers and tests
// learn the real address when AP_ADDR ends in :0).
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.Config.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// URL is where the API answers (valid after Listen).
func (s *Server) URL() string {
	scheme := "http"
	if s.Config.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + s.ln.Addr().String()
}

// Banner writes the startup lines: the URL, the database, the worker.
func (s *Server) Banner(w io.Writer) {
	worker := "running"
	if s.Config.NoWorker {
		worker = "off (--no-worker)"
	}
	if s.opts.HTTP {
		fmt.Fprintf(w, "Agent Platform listening on %s (docs: %s/docs)\n", s.URL(), s.URL())
	}
	fmt.Fprintf(w, "database: %s\n", s.Store)
	fmt.Fprintf(w, "worker: %s\n", worker)
}

// Run serves until ctx ends, then drains and closes everything. A service
// that fails to start stops the ones started before it, in reverse, and
// the database closes last.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	run := s.sequence()
	// The database closes after every service stopped: first in, last out.
	s.add(run, "store", lifecycle.Funcs{OnStop: func(context.Context) error { s.Close(); return nil }})
	s.addBackground(run)
	if s.Config.DebugAddr != "" {
		s.add(run, "debug server", &debugServer{s: s})
	}
	failed := make(chan error, 1)
	if s.opts.HTTP {
		s.add(run, "http server", router.NewServer(s.handler, router.ServerOptions{
			Listen: s.listener, TLSCert: s.Config.TLSCert, TLSKey: s.Config.TLSKey, Log: s.Log,
			// Requests outlive SIGTERM until Shutdown has drained them.
			Base: ctx,
			// SSE streams are requests Shutdown would wait for: end them,
			// their clients reconnect with Last-Event-ID.
			OnShutdown: s.API.CloseStreams,
			Failed:     failed,
		}))
	}
	if err := run.Start(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped while starting (SIGTERM at boot): a clean stop.
			return nil
		}
		return err
	}
	// Starting leaves garbage the idle process would keep in its RSS
	// until the next collection, which an idle heap does not trigger for
	// minutes: the migrations' parser buffers, the API's OpenAPI document
	// as it was built, the templates' parse trees. Collect it once and
	// hand the freed pages back to the OS (a few milliseconds, once). Two
	// collections: what sync.Pools hold (goose keeps 4 MB scan buffers
	// there) survives the first one, and the heap goal the last one sets
	// is twice what it leaves live.
	runtime.GC()
	debug.FreeOSMemory()
	if n, err := releaseStartupPages(); err != nil {
		s.Log.Debug("release startup pages", "err", err)
	} else {
		s.Log.Debug("released startup pages", "mapped_bytes", n)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-failed:
	}
	s.Log.Info("shutting down: draining requests and running jobs")
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), DrainTimeout)
	defer cancel()
	if err := run.Stop(drain); err != nil {
		s.Log.Warn("shutdown", "err", err)
	}
	s.Log.Info("stopped")
	return runErr
}

// sequence is an empty sequence whose failed start unwinds within the
// drain timeout.
func (s *Server) sequence() *lifecycle.Sequence {
	q := lifecycle.NewSequence(s.Log)
	q.UnwindTimeout = DrainTimeout
	return q
}

// addBackground adds the services of the process besides its servers, in
// the order they start (they stop in reverse):
//   - tracing first (when on), so that it flushes the spans of all the
//     others after they stopped;
//   - the event listener: a client that connects must hear other
//     nodes' events, and WebSocket clients must still hear the ends of the
//     activations that finish during the drain (hijacked connections are
//     not awaited by http.Server.Shutdown: closing the subscriptions ends
//     them);
//   - the worker (its row, heartbeat and fast path) before the queue, so
//     that River's jobs drain under a live heartbeat and the row goes
//     after the last of them;
//   - the queue: not Start's context itself, as River treats its end as a
//     hard stop that cancels running jobs at once; SIGTERM must drain them
//     (Queue.Stop) within DrainTimeout instead;
//   - the reaper, which enqueues and so needs the queue.
func (s *Server) addBackground(q *lifecycle.Sequence) {
	add := func(name string, svc lifecycle.Service) { s.add(q, name, svc) }
	// Tracing stops after everything that makes spans, and flushes them.
	if s.Tracing != nil {
		add("tracing", s.Tracing)
	}
	add("event listener", lifecycle.Funcs{OnStart: s.Events.Start, OnStop: func(context.Context) error {
		s.Events.Stop()
		return nil
	}})
	if !s.Config.NoWorker {
		add("worker", s.Activations.Worker())
	}
	add("queue", lifecycle.Funcs{
		OnStart: func(ctx context.Context) error { return s.Queue.Start(context.WithoutCancel(ctx)) },
		OnStop:  s.Queue.Stop,
	})
	if !s.Config.NoWorker {
		add("recovery", s.Activations.Recovery())
	}
}

// add adds a service to q, through the hook tests use to watch them.
func (s *Server) add(q *lifecycle.Sequence, name string, svc lifecycle.Service) {
	if s.wrapService != nil {
		svc = s.wrapService(name, svc)
	}
	q.Add(name, svc)
}

// Start starts the services besides the HTTP and debug servers (tests that
// serve Handler themselves); Stop drains them within ctx.
func (s *Server) Start(ctx context.Context) error {
	s.started = s.sequence()
	s.addBackground(s.started)
	return s.started.Start(ctx)
}

// Stop drains the services Start started within ctx (running activations
// finish or are handed back), then unregisters the worker.
func (s *Server) Stop(ctx context.Context) {
	if s.started == nil {
		return
	}
	if err := s.started.Stop(ctx); err != nil {
		s.Log.Warn("stop", "err", err)
	}
}

// listener is Listen's listener, bound now if it was not.
func (s *Server) listener() (net.Listener, error) {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return nil, err
		}
	}
	return s.ln, nil
}

// debugServer serves the Go profiler on AP_DEBUG_ADDR.
type debugServer struct {
	s   *Server
	srv *http.Server
}

func (d *debugServer) Start(context.Context) error {
	ln, err := net.Listen("tcp", d.s.Config.DebugAddr)
	if err != nil {
		return fmt.Errorf("AP_DEBUG_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	d.s.Log.Info("profiler listening", "addr", ln.Addr().String())
	return nil
}

// Stop closes the profiler at once: a profile in progress is not worth
// waiting for.
func (d *debugServer) Stop(context.Context) error {
	if d.srv == nil {
		return nil
	}
	return d.srv.Close()
}

// Handler serves every HTTP route of the process: the API and the pages
// (nil for a process without HTTP). Tests serve it with httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// NewLogger is the process logger: JSON in production, text otherwise.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Production() {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
