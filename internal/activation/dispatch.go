package activation

import (
	"context"
	"errors"
	"time"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The dispatcher. An activation its creating transaction did not claim
// (the creating process works no jobs, as an API node, or has no room) is
// left queued with no queue job behind it: every worker process takes
// queued activations straight from the table, as many as it has room for,
// in one transaction a batch (the claims, their started events, their
// agents), and runs them as it runs its own (local.go). A River job per
// run cost an API node an insert and a worker River's fetch, its executor
// and its completion: on PostgreSQL with an API node and two workers, more
// than the run itself.
//
// A worker looks when told something was queued (at once by its own
// process, by another node through the event bus's NOTIFY, which sends a
// batch of them in one statement), when one of its runs ends while it had
// no room for more, and every dispatchPoll, which also covers a
// notification lost while the bus's listener reconnected (it then tells
// every handler anyway).
//
// What a node claims it runs: the claim bounds (takeClaim, fairshare.Pool
// Room) keep it from taking more than it has slots for, so a second
// worker gets the rest. Users take turns within a batch
// (store.ActivationClaimQueued), and users who hold their share of this
// node come after the others.

// QueuedTopic is the bus's signal to other nodes that activations were
// queued.
const QueuedTopic = "activation.queued"

const (
	// dispatchPoll is how often an idle worker looks for queued
	// activations it was not told about.
	dispatchPoll = time.Second
	// dispatchCooldown is the least time between two claims of a
	// worker: under load, every activation queued on an API node wakes
	// every worker, and a claim per wake would be a transaction per run;
	// a worker that claimed a moment ago waits for the rest of it, and
	// claims what was queued meanwhile at once.
	dispatchCooldown = 10 * time.Millisecond
	// maxDispatch bounds one claim (and its statement's parameters).
	maxDispatch = 256
	// maxCrowded bounds the users a claim passes over.
	maxCrowded = 64
	// othersQuiet is how long a worker that found nobody's work queued
	// but its crowded users' looks no more for others': passing over one
	// user's hundred thousand queued rows is a scan of all of them (10 ms
	// on this machine), which each run's end would otherwise repeat. A
	// newcomer's run waits that much longer at most.
	othersQuiet = 250 * time.Millisecond
)

// queued tells the workers that an activation was queued: this process's
// dispatcher at once, the other nodes' through the bus (PostgreSQL).
func (s *Service) queued() {
	if l := s.local.Load(); l != nil {
		l.poke()
	}
	if s.Nodes != nil {
		s.Nodes.Broadcast(QueuedTopic, "")
	}
}

// QueuedElsewhere is the bus's handler of QueuedTopic: another node
// queued activations.
func (s *Service) QueuedElsewhere(string) {
	if l := s.local.Load(); l != nil {
		l.poke()
	}
}

// poke wakes the dispatcher, without waiting: one pending wake is enough.
func (l *local) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// dispatch claims and starts queued activations whenever it is woken,
// until l's dispatcher is stopped.
func (s *Service) dispatch(l *local) {
	defer close(l.dispatched)
	t := time.NewTicker(dispatchPoll)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-l.quit:
			return
		case <-l.wake:
		case <-t.C:
		}
		if wait := dispatchCooldown - time.Since(last); wait > 0 {
			cool := time.NewTimer(wait)
			select {
			case <-l.quit:
				cool.Stop()
				return
			case <-cool.C:
			}
		}
		for {
			full := s.dispatchOnce(l)
			last = time.Now()
			if !full {
				break
			}
			select {
			case <-l.quit:
				return
			default:
			}
		}
	}
}

// dispatchOnce claims and starts the queued activations this process has
// room for; true means it filled its room, so that more may be waiting.
func (s *Service) dispatchOnce(l *local) bool {
	if l.paused.Load() {
		return false
	}
	free, lend, crowded := l.slots.Room(maxCrowded)
	if time.Now().Before(l.othersQuiet) {
		lend, crowded = 0, nil // nobody else's work was queued a moment ago
	}
	n := min(free, cap(l.claims)-len(l.claims), maxDispatch)
	lend = min(lend, maxDispatch)
	if n+lend <= 0 {
		// A run's end wakes the dispatcher again (runLocal).
		l.backlog.Store(true)
		return false
	}
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
	defer cancel()
	runs, others, err := s.claimQueued(ctx, n, lend, crowded)
	switch {
	case errors.Is(err, errTrackedAlready):
		// The earlier run ends in a moment: claim again after the
		// cooldown.
		l.poke()
	case err != nil:
		s.Log.Warn("claim queued activations", "err", err)
	}
	if err == nil && len(crowded) > 0 && others == 0 {
		l.othersQuiet = time.Now().Add(othersQuiet)
	}
	for _, c := range runs {
		s.runLocal(c.r, c.a, c.agent, c.release)
	}
	full := err == nil && len(runs) == n+lend
	l.backlog.Store(full)
	return full
}

// claimedRun is a queued activation the dispatcher claims: tracked as r,
// holding a claim (release frees it), with its agent once claimed.
type claimedRun struct {
	r       *tracked
	release func()
	a       *store.Activation
	agent   *store.Agent
}

// claimQueued claims, in one transaction with their started events, up
// to n queued activations, other users' before the crowded ones', then up
// to lend more of users not crowded (the pool lends them slots past its
// size). Each run holds its claim and is tracked before the commit that
// claims its activation (track); the claims a statement did not use are
// given back before it: nothing stays reserved for work that is not
// there, which would send a creating request's activation to the queue.
// others is how many of them are of users not crowded.
func (s *Service) claimQueued(ctx context.Context, n, lend int, crowded []string) (runs []*claimedRun, others int, err error) {
	l := s.local.Load()
	held := map[string]*claimedRun{}
	var claimed []*store.Activation
	err = s.Store.InTx(ctx, func(tx *store.Store) error {
		now := s.now()
		take := func(k int, skip []string, lent bool) error {
			if k <= 0 {
				return nil
			}
			// Claims are taken for k before the statement and given back
			// for what it did not find, before the commit: nothing stays
			// reserved for work that is not there.
			var releases []func()
			if !lent {
				for len(releases) < k {
					release := s.takeClaim()
					if release == nil {
						break
					}
					releases = append(releases, release)
				}
				if k = len(releases); k == 0 {
					return nil
				}
			}
			got, err := tx.ActivationClaimNext(ctx, k, skip, s.opts.WorkerID, now)
			if err != nil {
				releaseAll(releases)
				return err
			}
			for i, a := range got {
				release := func() {}
				if !lent {
					release = releases[i]
				}
				r := s.track(l.ctx, a.ID)
				if r == nil {
					// Run by this process already (an earlier run of it
					// that gave itself up to wait, still ending): the
					// claim is undone with the transaction and made
					// again after the cooldown (dispatchOnce), when that
					// run has ended.
					releaseAll(releases[min(i, len(releases)):])
					return errTrackedAlready
				}
				held[a.ID] = &claimedRun{r: r, release: release}
			}
			if !lent {
				releaseAll(releases[len(got):])
			}
			claimed = append(claimed, got...)
			if skip != nil {
				others += len(got)
			}
			return nil
		}
		if err := take(n, crowded, false); err != nil {
			return err
		}
		if len(crowded) > 0 {
			if err := take(n-len(claimed), nil, false); err != nil {
				return err
			}
		}
		if err := take(lend, crowded, true); err != nil {
			return err
		}
		return s.startedTx(ctx, tx, claimed)
	})
	if err != nil {
		claimed = nil
	}
	runs = make([]*claimedRun, len(claimed))
	for i, a := range claimed {
		c := held[a.ID]
		c.a, c.agent = a, s.agentOf(ctx, a)
		runs[i] = c
		delete(held, a.ID)
	}
	for _, c := range held {
		s.untrack(c.r)
		c.release()
	}
	return runs, others, err
}

// errTrackedAlready undoes a claim that took an activation this process
// still tracks.
var errTrackedAlready = errors.New("activation: claimed a run this process tracks already")

// releaseAll gives back claims taken for runs that were not claimed.
func releaseAll(releases []func()) {
	for _, release := range releases {
		release()
	}
}

// startedTx records in tx the started events of activations claimed by
// this worker: every user's in one statement on PostgreSQL, where a claim
// of many users' runs wrote one a user.
func (s *Service) startedTx(ctx context.Context, tx *store.Store, claimed []*store.Activation) error {
	if len(claimed) == 0 {
		return nil
	}
	evs := make([]*events.Event, len(claimed))
	for i, a := range claimed {
		ev := s.event(events.ActivationStarted, a)
		evs[i] = &ev
	}
	return s.Events.Record(ctx, tx, evs...)
}

// agentOf is the agent a claimed run executes, read as creating an
// activation reads it: from memory when it can (store.AgentToActivate; on
// PostgreSQL a change made on another node shows within a second), where
// a claim read its agents in a statement of its own. nil when it cannot
// be read: the run then reads it itself, and fails if it is gone.
func (s *Service) agentOf(ctx context.Context, a *store.Activation) *store.Agent {
	agent, _, err := s.Store.AgentToActivate(ctx, a.AgentID)
	if err != nil {
		return nil
	}
	return agent
}
