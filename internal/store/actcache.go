package store

import (
	"sync"
	"time"
)

// A program waiting for an activation polls it, several times per
// activation, and on SQLite each of those reads re-reads pages the last
// commit invalidated. On SQLite this process makes every write, so the store
// keeps the activations it has recently written, as committed, and answers
// ActivationGet from memory. Every statement that changes an activation
// updates or drops its entry once its transaction has committed; deleting
// an app or an agent (whose activations go with it) empties the cache.
// PostgreSQL has no cache: other processes write there too.
type activationCache struct {
	mu      sync.Mutex
	cur     map[string]*Activation
	old     map[string]*Activation
	rotated time.Time
}

// activationCacheSpan is how long an entry lives at least (and at most
// twice that): long enough for the polls that follow an activation's end.
const activationCacheSpan = 5 * time.Second

func newActivationCache() *activationCache {
	return &activationCache{cur: map[string]*Activation{}, old: map[string]*Activation{}, rotated: time.Now()}
}

// get returns a copy of the cached activation.
func (c *activationCache) get(id string) (*Activation, bool) {
	c.mu.Lock()
	a, ok := c.cur[id]
	if !ok {
		a, ok = c.old[id]
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	cp := *a
	return &cp, true
}

func (c *activationCache) put(a *Activation) {
	cp := *a
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.rotated) >= activationCacheSpan {
		c.old, c.cur, c.rotated = c.cur, make(map[string]*Activation, len(c.cur)), now
	}
	delete(c.old, a.ID)
	c.cur[a.ID] = &cp
}

func (c *activationCache) drop(id string) {
	c.mu.Lock()
	delete(c.cur, id)
	delete(c.old, id)
	c.mu.Unlock()
}

func (c *activationCache) clear() {
	c.mu.Lock()
	c.cur, c.old = map[string]*Activation{}, map[string]*Activation{}
	c.mu.Unlock()
}

// changingActivation drops id's entry before a statement changes it. The
// entry is put back (cacheActivation) only after the commit, by the
// committer's work after it; until then reads go to the database, so a read
// between the commit and that work sees the change. A reader that learns
// from the events table that an activation ended, then reads it, must not
// be answered the state from before (a waiter missed its wakeup that way).
func (s *Store) changingActivation(id string) {
	if s.acts != nil {
		s.acts.drop(id)
	}
}

// cacheActivation records a's new committed state, if this store caches,
// from a transaction of the committer, whose updates run in commit order.
// A statement outside one commits on its own, and its update would race
// the committer's: a later transaction's state (the claim and the end of
// an activation just created) could be overwritten by the earlier one, and
// a poll answered "queued" for good. So it only drops the entry.
func (s *Store) cacheActivation(a *Activation) {
	switch {
	case s.acts == nil:
	case s.hooks == nil:
		s.acts.drop(a.ID)
	default:
		s.onCommit(func() { s.acts.put(a) })
	}
}

// uncacheActivation forgets id (or every activation, for ""), now and once
// the change commits (changingActivation says why now).
func (s *Store) uncacheActivation(id string) {
	if s.acts == nil {
		return
	}
	if id == "" {
		s.acts.clear()
	} else {
		s.acts.drop(id)
	}
	s.onCommit(func() {
		if id == "" {
			s.acts.clear()
		} else {
			s.acts.drop(id)
		}
	})
}
