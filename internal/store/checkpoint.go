package store

import (
	"context"
	"database/sql"
	"time"
)

// SQLite copies the WAL back into the database file (a checkpoint, with an
// fsync) on the commit that grows the WAL past 1000 pages, so that one
// commit in a few dozen stalled the single writer for several
// milliseconds, and every transaction queued behind it. The writer's
// automatic checkpoints are off; this goroutine runs passive checkpoints on a
// connection of its own instead, which never block the writer or readers.
type checkpointer struct {
	db   *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

// checkpointEvery is how often the WAL is copied back: often enough that it
// stays a few megabytes under load.
const checkpointEvery = 200 * time.Millisecond

func startCheckpointer(db *sql.DB) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A failed checkpoint is retried at the next tick; the
				// WAL only grows meanwhile.
				_, _ = db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}()
	return c
}

func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	_, _ = c.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	return c.db.Close()
}
