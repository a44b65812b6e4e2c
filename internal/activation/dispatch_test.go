package activation_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/store/storetest"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// workers is the bus of a cluster in one process: what an API node
// queues, every worker hears of.
type workers []*activation.Service

func (ws workers) Broadcast(topic, userID string) {
	for _, w := range ws {
		if topic == activation.QueuedTopic {
			w.QueuedElsewhere(userID)
		}
	}
}

// TestDispatchersShareTheQueue: an API node (no worker) leaves what it
// creates queued, with no queue job; two workers' dispatchers take it from
// the table at the same time, and every activation runs once, on one of
// them, at its first attempt.
func TestDispatchersShareTheQueue(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, true, activation.Options{Concurrency: 4, WorkerID: "w1"})
		q := queue.New(b.store, testdb.Logger(), queue.Options{})
		second := activation.New(activation.Deps{Store: b.store, Queue: q,
			Log: testdb.Logger(), Agents: ownAgents{b.store}, Events: noEvents{}, Executors: llmOnly(b.store, echo{})},
			activation.Options{Concurrency: 4, WorkerID: "w2"})
		require.NoError(t, q.Start(ctx)) // its River client: no worker
		for _, w := range []*activation.Service{b.svc, second} {
			r, err := w.StartRecovery(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { r.Stop(context.Background()) })
		}
		api := activation.New(activation.Deps{Store: b.store, Queue: queue.New(b.store, testdb.Logger(), queue.Options{}),
			Log: testdb.Logger(), Agents: ownAgents{b.store}, Events: noEvents{}, Nodes: workers{b.svc, second},
			Executors: llmOnly(b.store, echo{})}, activation.Options{WorkerID: "api"})

		// Three users, each with an agent, their runs interleaved.
		callers := []*auth.Caller{b.caller}
		agents := []*store.Agent{b.agent}
		for range 2 {
			c, ag := b.newUser(t)
			callers, agents = append(callers, c), append(agents, ag)
		}
		var ids []string
		for i := range 60 {
			a, _, err := api.Create(ctx, callers[i%3], activation.Request{AgentID: agents[i%3].ID, InputData: json.RawMessage(`{"prompt":"hi"}`)})
			require.NoError(t, err)
			require.Equal(t, store.StatusQueued, a.Status)
			ids = append(ids, a.ID)
		}
		ran := map[string]int{}
		for _, id := range ids {
			a := awaitEnd(t, b.store, id)
			require.Equal(t, store.StatusCompleted, a.Status)
			require.Equal(t, 1, a.Attempt, "claimed once")
			ran[a.WorkerID]++
		}
		require.Equal(t, 60, ran["w1"]+ran["w2"], "run by the workers: %v", ran)
		t.Logf("runs per worker: %v", ran)
		jobs, err := b.svc.Jobs(ctx, "", 100)
		require.NoError(t, err)
		for _, j := range jobs {
			require.NotEqual(t, "activation", j.Kind, "no queue job per run")
		}
	})
}

// newUser adds a user with an agent like the bundle's.
func (b *bundle) newUser(t *testing.T) (*auth.Caller, *store.Agent) {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@x.io", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.store.UserCreate(ctx, u, false))
	app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a" + uuid.NewString()[:8], Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.store.AppCreate(ctx, app))
	ag := *b.agent
	ag.ID, ag.AppID, ag.UserID = uuid.NewString(), app.ID, u.ID
	require.NoError(t, b.store.AgentCreate(ctx, &ag))
	return &auth.Caller{UserID: u.ID, Kind: auth.KindSession}, &ag
}

// paced is a provider that takes a moment to answer, as a real one does.
type paced struct{ d time.Duration }

func (p paced) Complete(ctx context.Context, r llm.Request) (*llm.Response, error) {
	t := time.NewTimer(p.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return echo{}.Complete(ctx, r)
}

// TestDispatchLetsANewcomerIn: one user has hundreds of runs queued ahead
// of another's one, and every slot of the worker; the other's run does
// not wait for them: it is claimed in a slot the pool lends, and ends
// while most of the first user's are still queued.
func TestDispatchLetsANewcomerIn(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, true, activation.Options{Concurrency: 2}, func(deps *activation.Deps) {
			deps.Executors = llmOnly(deps.Store, paced{60 * time.Millisecond})
		})
		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })
		api := activation.New(activation.Deps{Store: b.store, Queue: queue.New(b.store, testdb.Logger(), queue.Options{}),
			Log: testdb.Logger(), Agents: ownAgents{b.store}, Events: noEvents{}, Nodes: workers{b.svc},
			Executors: llmOnly(b.store, echo{})}, activation.Options{WorkerID: "api"})

		const heavy = 200
		for range heavy {
			_, _, err := api.Create(ctx, b.caller, activation.Request{AgentID: b.agent.ID, InputData: json.RawMessage(`{"prompt":"hi"}`)})
			require.NoError(t, err)
		}
		caller, agent := b.newUser(t)
		light, _, err := api.Create(ctx, caller, activation.Request{AgentID: agent.ID, InputData: json.RawMessage(`{"prompt":"me too"}`)})
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, awaitEnd(t, b.store, light.ID).Status)
		queued, _, err := b.store.ActivationDepth(ctx)
		require.NoError(t, err)
		t.Logf("the newcomer's run ended with %d of the other's %d still queued", queued, heavy)
		require.Greater(t, queued, heavy/2, "the newcomer waited for the backlog")
	})
}

// gated is a provider whose answers wait until open is closed; waiting
// counts the calls that wait.
type gated struct {
	open    chan struct{}
	waiting *atomic.Int32
}

func (g gated) Complete(ctx context.Context, r llm.Request) (*llm.Response, error) {
	g.waiting.Add(1)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.open:
	}
	return echo{}.Complete(ctx, r)
}

// TestABurstBeyondTheWarmGoroutinesEndsEveryRun: more runs in flight at
// once than the worker keeps warm goroutines for, so that their ends queue
// for the writer with no goroutine waiting (local.go, store.InTxThen);
// their answers come at once and the worker stops right away: every end is
// recorded, none is left running, and no goroutine outlives the test
// (goleak). Some answers the database refuses to store: those runs fail
// with the reason, through the retries a queued end makes too.
func TestABurstBeyondTheWarmGoroutinesEndsEveryRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		g := gated{open: make(chan struct{}), waiting: new(atomic.Int32)}
		b := setup(t, d, true, activation.Options{Concurrency: 1000}, func(deps *activation.Deps) {
			deps.Executors = llmOnly(deps.Store, g)
		})
		storetest.FailFinishes(t, b.store, "output_data", "poison")
		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		const n = 300 // more than the warm goroutines kept (warmRuns)
		ids := make([]string, n)
		for i := range ids {
			prompt := "hi"
			if i%50 == 7 {
				prompt = "poison"
			}
			a, _, err := b.svc.Create(ctx, b.caller, activation.Request{AgentID: b.agent.ID, InputData: json.RawMessage(`{"prompt":"` + prompt + `"}`)})
			require.NoError(t, err)
			ids[i] = a.ID
		}
		require.Eventually(t, func() bool { return g.waiting.Load() == n }, 20*time.Second, 5*time.Millisecond, "every run in flight at once")
		close(g.open)
		require.NoError(t, r.Stop(ctx))
		for i, id := range ids {
			a, err := b.store.ActivationGet(ctx, id)
			require.NoError(t, err)
			if i%50 == 7 {
				require.Equal(t, store.StatusFailed, a.Status, "activation %s", id)
				require.Equal(t, activation.ErrNotStored, *a.Error)
				continue
			}
			require.Equal(t, store.StatusCompleted, a.Status, "activation %s", id)
		}
	})
}
