package auth

import (
	"sync"
	"time"
)

// An API key is checked on every request, and a program polling for results
// presents the same key many times a second: the lookup was a third of the
// database reads of an activation. keyCache keeps what a key resolved to for
// keyCacheTTL. Everything that changes what a key may do (revoking it,
// disabling or changing its user) goes through this package and empties the
// cache, so on this process the change applies to the next request; other
// processes of a PostgreSQL deployment empty theirs when the change's
// broadcast arrives (hold.go), and see it within keyCacheTTL in any case.
type keyCache struct {
	mu      sync.RWMutex
	entries map[string]cachedKey // by the key's SHA-256 hash
	// gen counts forgets, so that a lookup that read the database before a
	// forget does not put back what the forget removed.
	gen uint64
}

type cachedKey struct {
	caller    Caller
	expiresAt *time.Time // the key's own expiry
	until     time.Time  // when the entry must be looked up again
}

const (
	keyCacheTTL = time.Second
	// keyCacheMax bounds the memory a flood of distinct keys can take.
	keyCacheMax = 10_000
)

func (c *keyCache) get(hash []byte, now time.Time) (*Caller, bool) {
	c.mu.RLock()
	e, ok := c.entries[string(hash)]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) || (e.expiresAt != nil && !now.Before(*e.expiresAt)) {
		return nil, false
	}
	caller := e.caller
	return &caller, true
}

// generation is what put wants from before the lookup it caches.
func (c *keyCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches what a key resolved to, unless the cache was emptied since
// generation gen.
func (c *keyCache) put(gen uint64, hash []byte, caller *Caller, expiresAt *time.Time, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.entries == nil || len(c.entries) >= keyCacheMax {
		c.entries = make(map[string]cachedKey)
	}
	c.entries[string(hash)] = cachedKey{caller: *caller, expiresAt: expiresAt, until: now.Add(keyCacheTTL)}
}

// forget empties the cache: a key or a user changed.
func (c *keyCache) forget() {
	c.mu.Lock()
	c.entries = nil
	c.gen++
	c.mu.Unlock()
}
