package store

import (
	"slices"
	"sync"
	"time"
)

// Every activation reads its agent and its app's status (AgentToActivate):
// on SQLite that read cost as much CPU as a tenth of the whole run, on
// PostgreSQL one statement of the four and a half a run takes. The store
// keeps what it read and forgets all of it whenever a statement of this
// process changes an agent or an app: before the statement, and again once
// it has committed. A reader stores what it read only if nothing was
// forgotten since it began: a read that started before a change committed
// (and saw the old row) never lands after it. On SQLite this process makes
// every write, so that is all; on PostgreSQL other processes write too,
// and an entry lives agentCacheTTL (a second) from its read: a change made
// on another process applies there within a second, as with API keys.
type agentCache struct {
	ttl      time.Duration // 0: entries live until forgotten
	mu       sync.Mutex
	gen      uint64 // counts forget calls
	cur, old map[string]agentEntry
	curBytes int // the entries' sizes in cur
	rotated  time.Time
}

type agentEntry struct {
	a         Agent
	appStatus string
	read      time.Time // when the read that found it began
}

// agentCacheTTL is how long an entry lives on PostgreSQL.
const agentCacheTTL = time.Second

// An entry lives at least agentCacheSpan, at most twice that; a map holds at
// most agentCacheMax entries and agentCacheBytes of them (a burst of
// distinct or large agents rotates sooner), so the cache stays a few
// megabytes whatever callers activate: an agent's configuration may be a
// megabyte of code. One larger than agentCacheEntryMax is not kept (read
// again each time: its run costs far more than the read).
const (
	agentCacheSpan     = time.Minute
	agentCacheMax      = 4096
	agentCacheBytes    = 8 << 20
	agentCacheEntryMax = agentCacheBytes / 32
)

// size is about what e holds in memory.
func (e *agentEntry) size() int {
	a := &e.a
	n := 512 + len(a.ID) + len(a.AppID) + len(a.UserID) + len(a.Name) + len(a.Description) + len(a.AgentTypeID) + len(a.Version) +
		len(a.Status) + len(a.Config) + len(a.SecretEnc) + len(a.WebhookURL) + len(a.InputSchema) + len(e.appStatus)
	for _, c := range a.Capabilities {
		n += 16 + len(c)
	}
	return n
}

func newAgentCache(ttl time.Duration) *agentCache {
	return &agentCache{ttl: ttl, cur: map[string]agentEntry{}, old: map[string]agentEntry{}, rotated: time.Now()}
}

// get returns a copy of the cached agent (its slices too: callers may
// change what they are given).
func (c *agentCache) get(id string) (*Agent, string, bool) {
	c.mu.Lock()
	e, ok := c.cur[id]
	if !ok {
		e, ok = c.old[id]
	}
	ttl := c.ttl
	c.mu.Unlock()
	if !ok || ttl > 0 && time.Since(e.read) >= ttl {
		return nil, "", false
	}
	a := e.a
	a.Capabilities, a.Config, a.InputSchema = slices.Clone(a.Capabilities), slices.Clone(a.Config), slices.Clone(a.InputSchema)
	return &a, e.appStatus, true
}

// A reading is what put must be given: begin it before reading the row.
type agentReading struct {
	gen  uint64
	read time.Time
}

func (c *agentCache) begin() agentReading {
	c.mu.Lock()
	defer c.mu.Unlock()
	return agentReading{gen: c.gen, read: time.Now()}
}

// put stores a (a copy of it) unless something was forgotten since r began.
func (c *agentCache) put(r agentReading, a *Agent, appStatus string) {
	e := agentEntry{a: *a, appStatus: appStatus, read: r.read}
	size := e.size()
	if size > agentCacheEntryMax {
		return
	}
	e.a.Capabilities, e.a.Config, e.a.InputSchema = slices.Clone(a.Capabilities), slices.Clone(a.Config), slices.Clone(a.InputSchema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.gen != c.gen {
		return
	}
	if now := time.Now(); now.Sub(c.rotated) >= agentCacheSpan || len(c.cur) >= agentCacheMax || c.curBytes+size > agentCacheBytes {
		c.old, c.cur, c.curBytes, c.rotated = c.cur, make(map[string]agentEntry, len(c.cur)), 0, now
	}
	delete(c.old, a.ID)
	if prev, ok := c.cur[a.ID]; ok {
		c.curBytes -= prev.size()
	}
	c.cur[a.ID] = e
	c.curBytes += size
}

func (c *agentCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.cur)
	clear(c.old)
	c.curBytes = 0
	c.mu.Unlock()
}

// changingAgents wraps write, a statement that changes agents or apps: the
// cache is forgotten before it, and again once it has committed (right
// after it outside a transaction).
func (s *Store) changingAgents(write func() error) error {
	s.agents.forget()
	err := write()
	if s.tx == nil {
		s.agents.forget()
	} else {
		s.onCommit(s.agents.forget)
	}
	return err
}
