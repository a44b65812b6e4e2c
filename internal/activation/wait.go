package activation

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// MaxWait is the longest create-and-wait (Prefer: wait=N): a longer wait
// is taken as this one.
const MaxWait = 60 * time.Second

// Ended reports whether a has reached its final state.
func Ended(a *store.Activation) bool {
	return a.Status == store.StatusCompleted || a.Status == store.StatusFailed
}

// waitPoll is how often Wait reads the state when it cannot hear events.
const waitPoll = 500 * time.Millisecond

// Wait returns activation a once it has ended or waits for an answer (a
// person's approval, its caller's tool results: nothing more happens
// until someone answers), or as it stands after d, whichever comes first. It listens for the end event (on any node, through
// the bus) rather than polling the database.
func (s *Service) Wait(ctx context.Context, a *store.Activation, d time.Duration) (*store.Activation, error) {
	return s.wait(ctx, a, d, true)
}

// wait is Wait; orAnswer false waits for the end only (a parent for its
// child, whose waits are not the parent's to answer).
func (s *Service) wait(ctx context.Context, a *store.Activation, d time.Duration, orAnswer bool) (*store.Activation, error) {
	stop := func(a *store.Activation) bool { return Ended(a) || (orAnswer && a.Waiting != nil) }
	if stop(a) || d <= 0 {
		return a, nil
	}
	// Subscribe before reading the state: an end committed meanwhile is
	// either in the state or on the subscription.
	sub := s.Events.Subscribe(a.UserID, events.Filter{ActivationID: a.ID}, 8)
	defer sub.Close()
	timer := time.NewTimer(d)
	defer timer.Stop()
	evs := sub.C
	var poll <-chan time.Time
	for {
		cur, err := s.Store.ActivationGet(ctx, a.ID)
		if ctx.Err() != nil {
			return a, nil // the client went away; nobody reads the answer
		}
		if err != nil {
			return nil, err
		}
		if stop(cur) {
			return cur, nil
		}
		a = cur
	listen:
		for {
			select {
			case <-ctx.Done():
				return a, nil
			case <-timer.C:
				return s.Store.ActivationGet(ctx, a.ID)
			case <-poll:
				break listen
			case ev, ok := <-evs:
				if !ok {
					// Dropped, or the listener connection was lost: read
					// the state every now and then instead.
					evs = nil
					t := time.NewTicker(waitPoll)
					defer t.Stop()
					poll = t.C
					break listen
				}
				if ev.Type == events.ActivationCompleted || ev.Type == events.ActivationFailed || (orAnswer && ev.Type == events.ActivationWaiting) {
					break listen
				}
			}
		}
	}
}
