package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// SQLite has one writer, and each transaction pays for its BEGIN, for its
// COMMIT and for writing every page it touched to the WAL, however little it
// changed there. Under load most of a write transaction is that overhead, and
// callers queue for the one connection in random order. The committer runs
// the transactions waiting at that moment as one transaction (group commit):
// each caller's function in its own savepoint, so one that fails rolls back
// alone, and one COMMIT for all. Callers see what they saw before: their
// function ran alone in a transaction that had committed when InTx returned;
// only the commit is shared.
type committer struct {
	db    *sql.DB
	store *Store // what the transactions' bound stores copy
	reqs  chan *txReq
	mu    sync.RWMutex // held for reading while submitting, for writing by close
	shut  bool
	ended chan struct{}
	// queued are the transactions of callers that do not wait for them
	// (InTxThen), kept here since a send on reqs blocks while it is full:
	// under load thousands of run ends queue for the one writer, and a
	// goroutine each, waiting, would hold its stack meanwhile. Their
	// callers bound them (a run's end holds its claim on a slot). kick
	// tells the loop that some came.
	qmu    sync.Mutex
	queued []*txReq
	kick   chan struct{}
	// checkpointed is when the committer last checkpointed (loop only).
	checkpointed time.Time
}

// txReq is one caller's transaction.
type txReq struct {
	ctx      context.Context
	fn       func(tx *Store) error
	done     chan struct{} // closed once err and panicked are set
	then     func(error)   // instead of done: InTxThen's caller, which does not wait
	err      error
	panicked any
	hooks    []func() // the store's work after commit (onCommit)
	after    []func() // the caller's (AfterCommit), run by InTx
}

// maxBatch bounds how many transactions share a commit, so that a batch's
// latency stays short while many callers wait.
const maxBatch = 256

var errClosed = errors.New("store: closed")

func newCommitter(s *Store) *committer {
	c := &committer{db: s.write, store: s, reqs: make(chan *txReq, maxBatch), ended: make(chan struct{}), kick: make(chan struct{}, 1)}
	go c.loop()
	return c
}

// submit hands r to the committer; errClosed once the store is closed.
func (c *committer) submit(ctx context.Context, r *txReq) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shut {
		return errClosed
	}
	select {
	case c.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue hands r to the committer without waiting (queued);
// errClosed once the store is closed.
func (c *committer) enqueue(r *txReq) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shut {
		return errClosed
	}
	c.qmu.Lock()
	c.queued = append(c.queued, r)
	c.qmu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// take moves queued transactions to batch, until it holds upTo.
func (c *committer) take(batch []*txReq, upTo int) []*txReq {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	n := min(len(c.queued), max(upTo-len(batch), 0))
	batch = append(batch, c.queued[:n]...)
	clear(c.queued[:n]) // the array outlives them: let them go
	c.queued = c.queued[n:]
	return batch
}

// close lets the queued transactions commit, then stops.
func (c *committer) close() {
	c.mu.Lock()
	if !c.shut {
		c.shut = true
		close(c.reqs)
	}
	c.mu.Unlock()
	<-c.ended
}

func (c *committer) loop() {
	defer close(c.ended)
	var carry []*txReq // not yet run when their batch broke
	for {
		// Those who do not wait take half a batch at most before those who
		// do (reqs) have joined it, and what room is left after.
		batch := c.take(carry, maxBatch/2)
		carry = nil
		for len(batch) == 0 {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					// Closed: nothing is queued after, so what is
					// queued now is the last.
					if batch = c.take(batch, maxBatch); len(batch) == 0 {
						return
					}
					continue
				}
				batch = append(batch, r)
			case <-c.kick:
				batch = c.take(batch, maxBatch/2)
			}
		}
		// One transaction has come: yield once before taking what else
		// is queued, so that the goroutines runnable now (requests and
		// runs about to submit theirs) join this batch rather than the
		// next. Under load that made batches 4.5 -> 11 transactions and
		// the commits, each writing every page it touched to the WAL
		// (some 25 pages), fewer by as much; alone, the yield finds no
		// one else to run and costs nothing.
		if len(batch)+len(c.reqs) < maxBatch {
			runtime.Gosched()
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		batch = c.take(batch, maxBatch)
		c.checkpoint()
		ran, rest := c.run(batch)
		carry = rest
		for _, r := range ran {
			if r.then != nil {
				go r.complete()
			} else {
				close(r.done)
			}
		}
	}
}

// checkpointEvery is how often the committer checkpoints under load: often
// enough that the WAL stays a few megabytes.
const checkpointEvery = 200 * time.Millisecond

// checkpoint copies the WAL back into the database between two batches,
// now and then. Between batches no write transaction is open, so the
// checkpoint completes and the next transaction starts the WAL over instead
// of growing it (a background checkpointer on its own connection could
// never finish under load, and the WAL grew to hundreds of MB).
func (c *committer) checkpoint() {
	if time.Since(c.checkpointed) < checkpointEvery {
		return
	}
	c.checkpointed = time.Now()
	_, _ = c.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
}

// run runs batch in one transaction. It returns the requests that ran (their
// err set) and those it could not run because the transaction broke.
func (c *committer) run(batch []*txReq) (ran, rest []*txReq) {
	// The transaction belongs to no caller: one caller's cancellation must
	// not interrupt a statement, which would make SQLite roll back everyone's
	// work.
	tx, err := c.db.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range batch {
			r.err = fmt.Errorf("store: begin: %w", err)
		}
		return batch, nil
	}
	bound := *c.store
	bound.tx, bound.shared, bound.evN = tx, true, new(int64)
	savepoints := len(batch) > 1
	var failed error
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			ran = append(ran, r)
			continue
		}
		if savepoints {
			if _, err := tx.Exec("SAVEPOINT tx"); err != nil {
				failed, rest = err, batch[i:]
				break
			}
		}
		own := bound
		own.hooks, own.after = &r.hooks, &r.after
		r.err, r.panicked = call(r.fn, &own)
		ran = append(ran, r)
		if r.err == nil && r.panicked == nil {
			if savepoints {
				if _, err := tx.Exec("RELEASE tx"); err != nil {
					failed, rest = err, batch[i+1:]
					break
				}
			}
			continue
		}
		r.hooks, r.after = nil, nil
		if !savepoints {
			_ = tx.Rollback()
			return ran, nil
		}
		// ROLLBACK TO fails only when SQLite has already rolled the whole
		// transaction back (an I/O error, say): everyone's work is gone.
		if _, err := tx.Exec("ROLLBACK TO tx"); err != nil {
			failed, rest = err, batch[i+1:]
			break
		}
		if _, err := tx.Exec("RELEASE tx"); err != nil {
			failed, rest = err, batch[i+1:]
			break
		}
	}
	if failed == nil {
		failed = tx.Commit()
		if failed != nil {
			failed = fmt.Errorf("store: commit: %w", failed)
		}
	} else {
		_ = tx.Rollback()
		failed = fmt.Errorf("store: batch transaction: %w", failed)
	}
	for _, r := range ran {
		switch {
		case failed != nil && r.err == nil && r.panicked == nil:
			r.err = failed
		case failed == nil:
			for _, h := range r.hooks {
				h()
			}
		}
	}
	return ran, rest
}

// complete ends an InTxThen whose transaction ran: as InTx returns.
func (r *txReq) complete() {
	if r.panicked != nil {
		panic(r.panicked)
	}
	if r.err == nil {
		runAll(r.after)
	}
	r.then(r.err)
}

// call runs fn, turning a panic into a value the caller re-raises.
func call(fn func(*Store) error, tx *Store) (err error, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return fn(tx), nil
}
