package lifecycle_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// journal records what the services did, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, s)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// service is a recording service whose Start or Stop may fail.
func service(j *journal, name string, startErr, stopErr error) lifecycle.Service {
	return lifecycle.Funcs{
		OnStart: func(context.Context) error {
			j.add("start " + name)
			return startErr
		},
		OnStop: func(context.Context) error {
			j.add("stop " + name)
			return stopErr
		},
	}
}

func TestSequenceStartsInOrderStopsInReverse(t *testing.T) {
	t.Parallel()
	j := &journal{}
	q := lifecycle.NewSequence(nil)
	for _, n := range []string{"a", "b", "c"} {
		q.Add(n, service(j, n, nil, nil))
	}
	require.NoError(t, q.Start(context.Background()))
	require.NoError(t, q.Start(context.Background()), "starting a running sequence does nothing")
	require.NoError(t, q.Stop(context.Background()))
	require.NoError(t, q.Stop(context.Background()), "stopping twice does nothing")
	require.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, j.all())
}

// TestSequenceFailedStartUnwinds: a later service fails to start; the
// earlier ones are stopped in reverse, the failed one and those after it are
// never stopped (nor started), and the error names the one that failed.
func TestSequenceFailedStartUnwinds(t *testing.T) {
	t.Parallel()
	j := &journal{}
	boom := errors.New("address in use")
	q := lifecycle.NewSequence(nil)
	q.Add("a", service(j, "a", nil, nil))
	q.Add("b", service(j, "b", nil, nil))
	q.Add("c", service(j, "c", boom, nil))
	q.Add("d", service(j, "d", nil, nil))
	err := q.Start(context.Background())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "start c: address in use")
	require.Equal(t, []string{"start a", "start b", "start c", "stop b", "stop a"}, j.all())

	require.NoError(t, q.Stop(context.Background()), "nothing left to stop")
	require.Len(t, j.all(), 5)
}

// TestSequenceUnwindsAfterCancel: a start cut short by the end of its
// context (a signal at boot) still stops what it started, with a context
// that is not cancelled, bounded by UnwindTimeout.
func TestSequenceUnwindsAfterCancel(t *testing.T) {
	t.Parallel()
	j := &journal{}
	ctx, cancel := context.WithCancel(context.Background())
	q := lifecycle.NewSequence(nil)
	q.UnwindTimeout = time.Minute
	q.Add("a", lifecycle.Funcs{OnStop: func(ctx context.Context) error {
		_, ok := ctx.Deadline()
		require.True(t, ok, "the unwind is bounded")
		require.NoError(t, ctx.Err())
		j.add("stop a")
		return nil
	}})
	q.Add("b", lifecycle.Funcs{OnStart: func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	}})
	require.ErrorIs(t, q.Start(ctx), context.Canceled)
	require.Equal(t, []string{"stop a"}, j.all())
}

// TestSequenceStopJoinsErrors: a service that fails to stop does not keep
// the ones before it running; every error comes back.
func TestSequenceStopJoinsErrors(t *testing.T) {
	t.Parallel()
	j := &journal{}
	e1, e3 := errors.New("one"), errors.New("three")
	q := lifecycle.NewSequence(nil)
	q.Add("a", service(j, "a", nil, e1))
	q.Add("b", service(j, "b", nil, nil))
	q.Add("c", service(j, "c", nil, e3))
	require.NoError(t, q.Start(context.Background()))
	err := q.Stop(context.Background())
	require.ErrorIs(t, err, e1)
	require.ErrorIs(t, err, e3)
	require.ErrorContains(t, err, "stop a: one")
	require.ErrorContains(t, err, "stop c: three")
	require.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, j.all())
}

// TestSequenceUnwindJoinsStopErrors: the start error comes back together
// with the errors of the stops it caused.
func TestSequenceUnwindJoinsStopErrors(t *testing.T) {
	t.Parallel()
	j := &journal{}
	boom, stuck := errors.New("boom"), errors.New("stuck")
	q := lifecycle.NewSequence(nil)
	q.Add("a", service(j, "a", nil, stuck))
	q.Add("b", service(j, "b", boom, nil))
	err := q.Start(context.Background())
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, stuck)
}

func TestStopNeverStarted(t *testing.T) {
	t.Parallel()
	j := &journal{}
	q := lifecycle.NewSequence(nil)
	q.Add("a", service(j, "a", nil, nil))
	require.NoError(t, q.Stop(context.Background()))
	require.Empty(t, j.all())
	require.NoError(t, lifecycle.Funcs{}.Start(context.Background()))
	require.NoError(t, lifecycle.Funcs{}.Stop(context.Background()))
}

// TestSequencesNest: a sequence is a service; the inner one unwinds as a
// whole when a later service of the outer one fails.
func TestSequencesNest(t *testing.T) {
	t.Parallel()
	j := &journal{}
	inner := lifecycle.NewSequence(nil)
	inner.Add("a", service(j, "a", nil, nil))
	inner.Add("b", service(j, "b", nil, nil))
	outer := lifecycle.NewSequence(nil)
	outer.Add("inner", inner)
	outer.Add("c", service(j, "c", errors.New("no"), nil))
	require.Error(t, outer.Start(context.Background()))
	require.Equal(t, []string{"start a", "start b", "start c", "stop b", "stop a"}, j.all())
}
