// Package lifecycle gives every long-running part of a process one shape
// (Start, then Stop) and starts and stops them as one: in order, and in
// reverse order on the way out, so that a part only ever runs while the
// parts it needs do. A start that fails halfway unwinds what it started,
// so a process never closes its database under a running queue.
//
// The shape follows River's rivershared/startstop, with a context on Stop:
// stopping drains (requests, jobs), and the caller bounds how long.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Service is a part of a process that runs in the background between
// Start and Stop.
//
// Start returns once the service runs (or failed to: then it has cleaned up
// after itself and must not be stopped). Stop returns once the service has
// stopped; it drains until ctx ends, then stops at once. Stop must be safe
// on a service that never started and on one already stopped.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Funcs is a Service made of two functions, for parts whose own API has
// another shape; a nil function does nothing.
type Funcs struct {
	OnStart func(ctx context.Context) error
	OnStop  func(ctx context.Context) error
}

// Start calls OnStart.
func (f Funcs) Start(ctx context.Context) error {
	if f.OnStart == nil {
		return nil
	}
	return f.OnStart(ctx)
}

// Stop calls OnStop.
func (f Funcs) Stop(ctx context.Context) error {
	if f.OnStop == nil {
		return nil
	}
	return f.OnStop(ctx)
}

// Sequence runs services in the order they were added and stops them in
// reverse. It is itself a Service, so sequences nest.
type Sequence struct {
	// UnwindTimeout bounds the stops after a failed Start (zero: no bound),
	// which run on Start's context without its cancellation: a start cut
	// short by a signal still unwinds.
	UnwindTimeout time.Duration

	log      *slog.Logger
	mu       sync.Mutex
	services []named
	started  int // services[:started] are running
}

type named struct {
	name string
	svc  Service
}

// NewSequence is an empty sequence that logs to log (nil: no logs).
func NewSequence(log *slog.Logger) *Sequence {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sequence{log: log}
}

// Add appends a service; name is for logs and errors. Add before Start.
func (q *Sequence) Add(name string, svc Service) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.services = append(q.services, named{name, svc})
}

// Start starts each service in turn. When one fails, the ones already
// started are stopped in reverse order and the error says which failed,
// joined with any error of those stops. Starting a running sequence does
// nothing.
func (q *Sequence) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started > 0 {
		return nil
	}
	for _, s := range q.services {
		if err := s.svc.Start(ctx); err != nil {
			err = fmt.Errorf("start %s: %w", s.name, err)
			unwind := context.WithoutCancel(ctx)
			if q.UnwindTimeout > 0 {
				var cancel context.CancelFunc
				unwind, cancel = context.WithTimeout(unwind, q.UnwindTimeout)
				defer cancel()
			}
			return errors.Join(err, q.stop(unwind))
		}
		q.started++
		q.log.Debug("started", "service", s.name)
	}
	return nil
}

// Stop stops the started services in reverse order, each with ctx, and
// joins their errors; one failing does not keep the others running.
// Stopping a sequence that is not running does nothing.
func (q *Sequence) Stop(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stop(ctx)
}

func (q *Sequence) stop(ctx context.Context) error {
	var errs []error
	for q.started > 0 {
		q.started--
		s := q.services[q.started]
		if err := s.svc.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.name, err))
			continue
		}
		q.log.Debug("stopped", "service", s.name)
	}
	return errors.Join(errs...)
}
