package activation

import (
	"context"
	"sync"
	"time"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The claims of River's runs, batched. Without the fast path (an API node
// that does not work creates every activation: serve --no-worker and
// worker nodes) each run's claim was a transaction of its own (BEGIN, the
// UPDATE, its started event, COMMIT) and then a read of its agent, on a
// worker that River hands a batch of jobs at once. A claim that comes
// while another is being committed waits for it and goes with the others
// that came meanwhile, in one transaction: one UPDATE for all, one read
// of their agents, one insert of each user's started events, one commit.
// Alone, a claim goes at once, as before.
type claimer struct {
	mu      sync.Mutex
	pending []*claimReq
	busy    bool // a batch is being claimed: new claims wait for the next
}

// claimReq is one run's claim; done is closed once a (nil: the activation
// was not queued any more) and agent or err are set.
type claimReq struct {
	id    string
	done  chan struct{}
	a     *store.Activation
	agent *store.Agent
	err   error
}

// maxClaimBatch bounds one claim transaction (and its statement's
// parameters).
const maxClaimBatch = 256

// claim moves queued activation id to running for this worker with its
// started event, and returns it and its agent (nil when it is gone: the
// run then fails as it did when its read failed). nil, nil: it was not
// queued (run already, cancelled, or a duplicate job).
func (s *Service) claim(ctx context.Context, id string) (*store.Activation, *store.Agent, error) {
	r := &claimReq{id: id, done: make(chan struct{})}
	c := &s.claims
	c.mu.Lock()
	c.pending = append(c.pending, r)
	lead := !c.busy
	c.busy = true
	c.mu.Unlock()
	if lead {
		// The transaction must end whatever becomes of this run's job:
		// the others' claims are in it.
		go s.claimBatches(context.WithoutCancel(ctx))
	}
	// Never given up on: a claim that committed with nobody to run it
	// would hold the activation running on a live worker.
	<-r.done
	return r.a, r.agent, r.err
}

// claimBatches claims the pending runs' activations, a batch at a time,
// until none is left.
func (s *Service) claimBatches(ctx context.Context) {
	c := &s.claims
	for {
		c.mu.Lock()
		batch := c.pending
		if len(batch) > maxClaimBatch {
			batch = batch[:maxClaimBatch]
		}
		c.pending = c.pending[len(batch):]
		if len(batch) == 0 {
			c.busy = false
			c.pending = nil
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		s.claimBatch(ctx, batch)
		for _, r := range batch {
			close(r.done)
		}
	}
}

// claimBatch claims batch's activations in one transaction.
func (s *Service) claimBatch(ctx context.Context, batch []*claimReq) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	var claimed []*store.Activation
	var agents map[string]*store.Agent
	err := s.Store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if claimed, err = tx.ActivationClaimMany(ctx, ids, s.opts.WorkerID, s.now()); err != nil || len(claimed) == 0 {
			return err
		}
		agents, err = s.startedTx(ctx, tx, claimed)
		return err
	})
	byID := make(map[string]*store.Activation, len(claimed))
	for _, a := range claimed {
		byID[a.ID] = a
	}
	for _, r := range batch {
		if err != nil {
			r.err = err
			continue
		}
		if a := byID[r.id]; a != nil {
			r.a, r.agent = a, agents[a.AgentID]
		}
	}
}

// startedTx records in tx the started events of activations claimed by
// this worker, one statement per user, and reads their agents.
func (s *Service) startedTx(ctx context.Context, tx *store.Store, claimed []*store.Activation) (map[string]*store.Agent, error) {
	if len(claimed) == 0 {
		return nil, nil
	}
	var agentIDs []string
	seen := map[string]bool{}
	byUser := map[string][]*events.Event{}
	var users []string
	for _, a := range claimed {
		if !seen[a.AgentID] {
			seen[a.AgentID] = true
			agentIDs = append(agentIDs, a.AgentID)
		}
		ev := s.event(events.ActivationStarted, a)
		if byUser[a.UserID] == nil {
			users = append(users, a.UserID)
		}
		byUser[a.UserID] = append(byUser[a.UserID], &ev)
	}
	agents, err := tx.AgentGetMany(ctx, agentIDs)
	if err != nil {
		return nil, err
	}
	// One user's events in one statement (they must be one user's).
	for _, u := range users {
		if err := s.Events.Record(ctx, tx, byUser[u]...); err != nil {
			return nil, err
		}
	}
	return agents, nil
}
