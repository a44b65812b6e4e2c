package activation_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// ownAgents lets the owner use their agents (what apps.Service does, minus
// apps' own rules, which are tested there).
type ownAgents struct{ s *store.Store }

func (o ownAgents) VisibleAgent(ctx context.Context, c *auth.Caller, id string) (*store.Agent, error) {
	a, err := o.s.AgentGet(ctx, id)
	if err != nil || a.UserID != c.UserID {
		return nil, apperr.NotFoundf("Agent not found")
	}
	return a, nil
}

func (o ownAgents) Agent(ctx context.Context, c *auth.Caller, id string) (*store.Agent, error) {
	return o.VisibleAgent(ctx, c, id)
}

func (o ownAgents) OwnedApp(ctx context.Context, _ *auth.Caller, id string) (*store.App, error) {
	return o.s.AppGet(ctx, id)
}

func (o ownAgents) ListApp(_ context.Context, c *auth.Caller, id string) (string, error) {
	if id == "" {
		return c.AppID, nil
	}
	return id, nil
}

// echo stands for the provider: the LLM vendors are what we may fake.
type echo struct{}

func (echo) Complete(_ context.Context, r llm.Request) (*llm.Response, error) {
	return &llm.Response{Text: "echo: " + r.Messages[len(r.Messages)-1].Content, Model: "echo", FinishReason: "stop"}, nil
}

// llmOnly runs LLM agents on provider client, whatever provider is named.
func llmOnly(s *store.Store, client llm.Client) executor.Registry {
	resolve := func(context.Context, string, string) (*llm.Resolved, error) {
		return &llm.Resolved{Client: client, ProviderID: "echo", DefaultModel: "echo"}, nil
	}
	return executor.NewRegistry(runtimes.NewLLM(resolve, s, testdb.Logger()))
}

type noEvents struct{}

func (noEvents) Record(context.Context, *store.Store, ...*events.Event) error { return nil }
func (noEvents) RecordWith(_ *store.Store, write func([]*store.EventRow) error, _ ...*events.Event) error {
	return write(nil)
}
func (noEvents) RecordWithThen(_ *store.Store, write func([]*store.EventRow, func(error)), then func(error), _ ...*events.Event) {
	write(nil, then)
}
func (noEvents) PublishDelta(context.Context, string, string, string) {}
func (noEvents) EndTokens(string, string)                             {}
func (noEvents) Subscribe(string, events.Filter, int) *events.Subscription {
	return nil
}

type bundle struct {
	store  *store.Store
	svc    *activation.Service
	caller *auth.Caller
	agent  *store.Agent
}

// setup builds the service on a migrated database of dialect d; the queue
// runs only when work is true. with, if given, changes the service's
// dependencies before it is built.
func setup(t *testing.T, d store.Dialect, work bool, opts activation.Options, with ...func(*activation.Deps)) *bundle {
	t.Helper()
	ctx := context.Background()
	s := testdb.Open(t, d)
	q := queue.New(s, testdb.Logger(), queue.Options{RunWorkers: work, Workers: 4, FetchPollInterval: 20 * time.Millisecond, FetchCooldown: time.Millisecond})
	authSvc, err := auth.New(s, testdb.Logger(), auth.Options{SessionTTL: time.Hour, Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	deps := activation.Deps{Store: s, Auth: authSvc, Queue: q, Log: testdb.Logger(), Agents: ownAgents{s}, Events: noEvents{},
		Executors: llmOnly(s, echo{})}
	for _, f := range with {
		f(&deps)
	}
	svc := activation.New(deps, opts)
	require.NoError(t, q.Start(ctx))
	t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })

	now := store.Now()
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@x.io", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.UserCreate(ctx, u, false))
	app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AppCreate(ctx, app))
	ag := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: u.ID, Name: "a", AgentTypeID: "llm", Version: "1", Status: "active",
		TimeoutSeconds: 30, Config: json.RawMessage(`{"model":"echo"}`), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AgentCreate(ctx, ag))
	return &bundle{store: s, svc: svc, caller: &auth.Caller{UserID: u.ID, Kind: auth.KindSession}, agent: ag}
}

// strand makes an activation look like one a worker died running: claimed
// by deadWorker, whose last heartbeat is an hour old.
func (b *bundle) strand(t *testing.T, deadWorker string, attempts int) string {
	t.Helper()
	ctx := context.Background()
	// Straight into the store, with no job: the dead worker's job is beside
	// the point (the reaper enqueues a fresh one), and a job could be
	// fetched and claimed by the live queue before this claim.
	a := &store.Activation{ID: uuid.NewString(), UserID: b.caller.UserID, AppID: b.agent.AppID, AgentID: b.agent.ID,
		Status: store.StatusQueued, InputData: json.RawMessage(`{"prompt":"hi"}`), Priority: 2, CreatedAt: store.Now()}
	require.NoError(t, b.store.ActivationCreate(ctx, a))
	for i := range attempts {
		_, ok, err := b.store.ActivationClaim(ctx, a.ID, deadWorker, store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		if i < attempts-1 { // earlier attempts were handed back
			_, err = b.store.ActivationRequeue(ctx, a.ID)
			require.NoError(t, err)
		}
	}
	old := store.Now().Add(-time.Hour)
	require.NoError(t, b.store.WorkerHeartbeat(ctx, &store.Worker{ID: deadWorker, Hostname: "gone", PID: 1, Version: "x", StartedAt: old, HeartbeatAt: old}))
	return a.ID
}

func awaitEnd(t *testing.T, s *store.Store, id string) *store.Activation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := s.ActivationGet(context.Background(), id)
		require.NoError(t, err)
		if a.Status == store.StatusCompleted || a.Status == store.StatusFailed {
			return a
		}
		require.True(t, time.Now().Before(deadline), "activation stuck %s", a.Status)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDeadWorkersActivationsComeBack: a worker that stopped heartbeating
// holds a running activation; a live worker's recovery re-queues it with a
// fresh job and it completes. Past the last attempt, it fails with a reason.
func TestDeadWorkersActivationsComeBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, true, activation.Options{MaxAttempts: 3, HeartbeatEvery: 50 * time.Millisecond, DeadAfter: 200 * time.Millisecond})
		ctx := context.Background()
		comesBack := b.strand(t, "dead-1", 1)
		givesUp := b.strand(t, "dead-2", 3)

		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })

		a := awaitEnd(t, b.store, comesBack)
		require.Equal(t, store.StatusCompleted, a.Status)
		require.Equal(t, 2, a.Attempt)
		f := awaitEnd(t, b.store, givesUp)
		require.Equal(t, store.StatusFailed, f.Status)
		require.Contains(t, *f.Error, "stopped responding (attempt 3 of 3)")

		require.Eventually(t, func() bool {
			st, err := b.svc.Status(ctx)
			return err == nil && len(st.Workers) == 1
		}, 10*time.Second, 20*time.Millisecond, "the dead workers are gone, the live one is listed")
	})
}

// TestDeadWorkersFetchedJobsComeBack: a worker died between River's fetch
// and its claim: the activation is still queued and its River job running,
// attempted by the dead worker. River's own rescuer leaves the job alone
// (the activation worker has no River timeout); a live worker's reaper
// hands it back and the activation completes. A job a live process
// fetched is left running (its activation, queued, a dispatcher runs).
func TestDeadWorkersFetchedJobsComeBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, true, activation.Options{HeartbeatEvery: 50 * time.Millisecond, DeadAfter: 200 * time.Millisecond})
		ctx := context.Background()
		old := store.Now().Add(-time.Hour)
		require.NoError(t, b.store.WorkerHeartbeat(ctx, &store.Worker{ID: "dead-1", Hostname: "gone", PID: 1, Version: "x", StartedAt: old, HeartbeatAt: old}))
		now := store.Now()
		require.NoError(t, b.store.WorkerHeartbeat(ctx, &store.Worker{ID: "live-1", Hostname: "here", PID: 2, Version: "x", StartedAt: now, HeartbeatAt: now.Add(time.Hour)}))
		stranded := b.fetched(t, "dead-1")
		held := b.fetched(t, "live-1")

		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })

		a := awaitEnd(t, b.store, stranded)
		require.Equal(t, store.StatusCompleted, a.Status)
		require.Equal(t, store.StatusCompleted, awaitEnd(t, b.store, held).Status)
		// The dead worker's job handed back, and done; the live one's left.
		require.Eventually(t, func() bool {
			jobs, err := b.svc.Jobs(ctx, "running", 10)
			require.NoError(t, err)
			return len(jobs) == 1 && jobs[0].ActivationID == held
		}, 10*time.Second, 10*time.Millisecond, "a live worker's job is its own")
	})
}

// TestASoleProcessTakesBackACrashedOnesRunsAtOnce: a process that holds
// its SQLite database alone (store.Sole) knows that a worker the database
// still lists died, however fresh its last heartbeat: restarted after a
// crash, it resumes the crashed process's runs, and the jobs it had
// fetched, without waiting out DeadAfter. (On PostgreSQL, where others
// may share the database, a worker is dead only once silent for
// DeadAfter: TestDeadWorkersActivationsComeBack.)
func TestASoleProcessTakesBackACrashedOnesRunsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, true, activation.Options{HeartbeatEvery: time.Hour, DeadAfter: time.Hour})
	ctx := context.Background()
	require.NoError(t, b.store.Exclusive())
	require.True(t, b.store.Sole())
	running := b.strand(t, "crashed-1", 1)
	stranded := b.fetched(t, "crashed-1")
	now := store.Now()
	require.NoError(t, b.store.WorkerHeartbeat(ctx, &store.Worker{ID: "crashed-1", Hostname: "here", PID: 1, Version: "x", StartedAt: now, HeartbeatAt: now}))

	r, err := b.svc.StartRecovery(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { r.Stop(context.Background()) })

	a := awaitEnd(t, b.store, running)
	require.Equal(t, store.StatusCompleted, a.Status)
	require.Equal(t, 2, a.Attempt)
	require.Equal(t, store.StatusCompleted, awaitEnd(t, b.store, stranded).Status)
}

// fetched makes an activation look like one whose job worker fetched
// (River's job running, attempted by worker, a second ago) but did not
// claim yet.
func (b *bundle) fetched(t *testing.T, worker string) string {
	t.Helper()
	ctx := context.Background()
	a := &store.Activation{ID: uuid.NewString(), UserID: b.caller.UserID, AppID: b.agent.AppID, AgentID: b.agent.ID,
		Status: store.StatusQueued, InputData: json.RawMessage(`{"prompt":"hi"}`), Priority: 2, CreatedAt: store.Now()}
	require.NoError(t, b.store.ActivationCreate(ctx, a))
	args, err := json.Marshal(activation.Args{ActivationID: a.ID, UserID: a.UserID})
	require.NoError(t, err)
	// Older than DeadAfter, younger than River's own RescueStuckJobsAfter.
	at := time.Now().Add(-time.Second)
	_, err = b.store.RiverDriver().GetExecutor().JobInsertFull(ctx, &riverdriver.JobInsertFullParams{
		Kind: activation.Args{}.Kind(), EncodedArgs: args, Queue: queue.Activations, Priority: 2, MaxAttempts: 10,
		State: rivertype.JobStateRunning, Attempt: 1, AttemptedAt: &at, AttemptedBy: []string{worker}, Metadata: []byte(`{}`)})
	require.NoError(t, err)
	return a.ID
}

// TestLostLocalRunsComeBack: an activation running under this live
// worker's id that no run of this process holds (a fast-path run has no
// River job behind it) is handed back by the worker's own sweep, after
// two sweeps found it, and completes; one this process runs is left alone.
func TestLostLocalRunsComeBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, true, activation.Options{WorkerID: "self-" + uuid.NewString(), HeartbeatEvery: 50 * time.Millisecond,
			DeadAfter: time.Hour})
		ctx := context.Background()
		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })

		// Created running here, as the fast path does: queued, a
		// dispatcher could take it first.
		now := store.Now()
		lost := &store.Activation{ID: uuid.NewString(), UserID: b.caller.UserID, AppID: b.agent.AppID, AgentID: b.agent.ID,
			Status: store.StatusRunning, InputData: json.RawMessage(`{"prompt":"hi"}`), Priority: 2, CreatedAt: now,
			StartedAt: &now, WorkerID: b.svc.WorkerID(), Attempt: 1}
		require.NoError(t, b.store.ActivationCreate(ctx, lost))

		a := awaitEnd(t, b.store, lost.ID)
		require.Equal(t, store.StatusCompleted, a.Status)
		require.Equal(t, 2, a.Attempt, "handed back once, then run")
	})
}
