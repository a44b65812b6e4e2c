package store

import (
	"slices"
	"sync"
	"time"
)

// Every activation reads its agent and its app's status (AgentToActivate,
// or AgentToActivateInApp for MCP's and the OpenAI endpoint's calls, which
// name it): on SQLite that read cost as much CPU as a tenth of the whole
// run, on PostgreSQL one statement of the four and a half a run takes. The
// store keeps what it read and forgets all of it whenever a statement of
// this process changes an agent, an app, or the names of an app's
// functions and pipelines: before the statement, and again once it has
// committed. A reader stores what it read only if nothing was forgotten
// since it began: a read that started before a change committed (and saw
// the old row) never lands after it. On SQLite this process makes
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
	shared    bool      // AgentToActivateInApp's shared
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

// An entry's key is the agent's id (AgentToActivate), or inAppKey's of
// the name it was read by (AgentToActivateInApp): the two never meet, as
// an id has no NUL.
func inAppKey(userID, appID, appSlug, name string) string {
	return "\x00" + userID + "\x00" + appID + "\x00" + appSlug + "\x00" + name
}

// get returns a copy of the entry of key (its agent's slices too: callers
// may change what they are given).
func (c *agentCache) get(key string) (agentEntry, bool) {
	c.mu.Lock()
	e, ok := c.cur[key]
	if !ok {
		e, ok = c.old[key]
	}
	ttl := c.ttl
	c.mu.Unlock()
	if !ok || ttl > 0 && time.Since(e.read) >= ttl {
		return agentEntry{}, false
	}
	a := &e.a
	a.Capabilities, a.Config, a.InputSchema = slices.Clone(a.Capabilities), slices.Clone(a.Config), slices.Clone(a.InputSchema)
	return e, true
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

// put stores e under key (a copy of its agent) unless something was
// forgotten since r began.
func (c *agentCache) put(r agentReading, key string, e agentEntry) {
	e.read = r.read
	size := e.size() + len(key)
	if size > agentCacheEntryMax {
		return
	}
	a := &e.a
	a.Capabilities, a.Config, a.InputSchema = slices.Clone(a.Capabilities), slices.Clone(a.Config), slices.Clone(a.InputSchema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.gen != c.gen {
		return
	}
	if now := time.Now(); now.Sub(c.rotated) >= agentCacheSpan || len(c.cur) >= agentCacheMax || c.curBytes+size > agentCacheBytes {
		c.old, c.cur, c.curBytes, c.rotated = c.cur, make(map[string]agentEntry, len(c.cur)), 0, now
	}
	delete(c.old, key)
	if prev, ok := c.cur[key]; ok {
		c.curBytes -= prev.size() + len(key)
	}
	c.cur[key] = e
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

// changingAgents wraps write, a statement that changes agents or apps, or
// the names of functions and pipelines (AgentGetInApp's shared): the
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
