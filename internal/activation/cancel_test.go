package activation_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// cancelOnEvent is the event bus of a client that cancels an activation the
// moment it hears an event of type typ about it: inside Publish, after the
// commit that claimed the activation and before the process that claimed it
// has started the run (as when that process is busy).
type cancelOnEvent struct {
	noEvents
	typ   string
	svc   atomic.Pointer[activation.Service]
	store *store.Store

	mu   sync.Mutex
	errs []error // of the cancels made
}

// Record hears the events once they have committed, as subscribers do.
func (c *cancelOnEvent) Record(ctx context.Context, tx *store.Store, evs ...*events.Event) error {
	heard := make([]events.Event, len(evs))
	for i, ev := range evs {
		heard[i] = *ev
	}
	tx.AfterCommit(func() { c.hear(ctx, heard) })
	return nil
}

func (c *cancelOnEvent) RecordWith(tx *store.Store, write func([]*store.EventRow) error, evs ...*events.Event) error {
	if err := write(nil); err != nil {
		return err
	}
	return c.Record(context.Background(), tx, evs...)
}

func (c *cancelOnEvent) RecordWithThen(tx *store.Store, write func([]*store.EventRow, func(error)), then func(error), evs ...*events.Event) {
	write(nil, func(err error) {
		if err == nil {
			err = c.Record(context.Background(), tx, evs...)
		}
		then(err)
	})
}

func (c *cancelOnEvent) hear(ctx context.Context, evs []events.Event) {
	for _, ev := range evs {
		if ev.Type != c.typ {
			continue
		}
		a, err := c.store.ActivationGet(ctx, ev.ActivationID)
		if err == nil {
			_, err = c.svc.Load().Cancel(ctx, a)
		}
		c.mu.Lock()
		c.errs = append(c.errs, err)
		c.mu.Unlock()
	}
}

func (c *cancelOnEvent) cancels() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// countingEcho is a provider that counts the calls that reach it.
type countingEcho struct{ calls *atomic.Int32 }

func (c countingEcho) Complete(ctx context.Context, r llm.Request) (*llm.Response, error) {
	c.calls.Add(1)
	return echo{}.Complete(ctx, r)
}

// TestCancelBeforeTheRunStartsNeverReachesTheProvider: a cancel committed
// once an activation is claimed, but before its run has got going, stops
// the run before the provider is called, on the fast path (claimed by the
// creating transaction) and on the dispatcher's (created by a node that
// works no jobs, claimed by the worker's dispatcher).
func TestCancelBeforeTheRunStartsNeverReachesTheProvider(t *testing.T) {
	t.Parallel()
	for _, path := range []struct {
		name, cancelOn string
		local          bool
	}{
		{"local", events.ActivationCreated, true},
		{"dispatched", events.ActivationStarted, false},
	} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
				var calls atomic.Int32
				bus := &cancelOnEvent{typ: path.cancelOn}
				b := setup(t, d, true, activation.Options{Concurrency: 1}, func(deps *activation.Deps) {
					bus.store = deps.Store
					deps.Events = bus
					deps.Executors = llmOnly(deps.Store, countingEcho{&calls})
				})
				bus.svc.Store(b.svc)
				ctx := context.Background()
				r, err := b.svc.StartRecovery(ctx)
				require.NoError(t, err)
				t.Cleanup(func() { r.Stop(context.Background()) })
				creator := b.svc
				if !path.local { // an API node: it leaves the activation queued
					creator = activation.New(activation.Deps{Store: b.store, Queue: queue.New(b.store, testdb.Logger(), queue.Options{}),
						Log: testdb.Logger(), Agents: ownAgents{b.store}, Events: noEvents{}, Nodes: wake{b.svc},
						Executors: llmOnly(b.store, echo{})}, activation.Options{WorkerID: "api-node"})
				}

				a, _, err := creator.Create(ctx, b.caller, activation.Request{AgentID: b.agent.ID, InputData: json.RawMessage(`{"prompt":"hi"}`)})
				require.NoError(t, err)
				got := awaitEnd(t, b.store, a.ID)
				require.Equal(t, activation.ErrCancelled, *got.Error)
				require.Eventually(t, func() bool { return b.svc.Running() == 0 }, 20*time.Second, 10*time.Millisecond, "the run ends")
				require.Equal(t, []error{nil}, bus.cancels(), "cancelled once, while claimed")
				require.Zero(t, calls.Load(), "the cancelled run never reached the provider")
			})
		})
	}
}

// wake is the bus between an API node and a worker: what the one queues,
// the other hears of.
type wake struct{ worker *activation.Service }

func (w wake) Broadcast(topic, userID string) {
	if topic == activation.QueuedTopic {
		w.worker.QueuedElsewhere(userID)
	}
}

// heldLLM answers no call until the call's context ends, and reports both.
type heldLLM struct{ started, ended chan struct{} }

func (h heldLLM) Complete(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	close(h.started) // one call
	<-ctx.Done()
	close(h.ended)
	return nil, ctx.Err()
}

// TestCancelOnAnotherNodeStopsTheRun: on PostgreSQL, a cancel that another
// node receives stops a run this worker has waiting on its provider: the
// worker reads its runs' cancel flags, all in one statement, every second.
func TestCancelOnAnotherNodeStopsTheRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		if d == store.SQLite {
			t.Skip("one process serves a SQLite database: its cancels reach its runs at once")
		}
		ctx := context.Background()
		provider := heldLLM{started: make(chan struct{}), ended: make(chan struct{})}
		b := setup(t, d, true, activation.Options{Concurrency: 4}, func(deps *activation.Deps) {
			deps.Executors = llmOnly(deps.Store, provider)
		})
		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })
		a, _, err := b.svc.Create(ctx, b.caller, activation.Request{AgentID: b.agent.ID, InputData: json.RawMessage(`{"prompt":"hi"}`)})
		require.NoError(t, err)
		within := func(ch chan struct{}, what string) {
			t.Helper()
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatal(what)
			}
		}
		within(provider.started, "the run never reached the provider")

		other := activation.New(activation.Deps{Store: b.store, Queue: queue.New(b.store, testdb.Logger(), queue.Options{}),
			Log: testdb.Logger(), Agents: ownAgents{b.store}, Events: noEvents{}, Executors: llmOnly(b.store, echo{})},
			activation.Options{WorkerID: "another-node"})
		_, err = other.Cancel(ctx, a)
		require.NoError(t, err)
		within(provider.ended, "the run goes on after a cancel on another node")
		require.Equal(t, activation.ErrCancelled, *awaitEnd(t, b.store, a.ID).Error)
	})
}
