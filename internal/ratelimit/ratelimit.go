// Package ratelimit keeps per-key limits: a token bucket
// (golang.org/x/time/rate) per caller for the request rate, and a fixed
// window per key for failures (Window). Both forget keys that have been idle
// long enough to be fresh again, so memory stays bounded by the number of
// recent callers.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a set of per-key token buckets.
type Limiter struct {
	every time.Duration // time to earn one token
	burst int

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
	now       func() time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// PerMinute allows n events a minute per key with a burst of burst.
func PerMinute(n, burst int) *Limiter {
	return &Limiter{every: time.Minute / time.Duration(n), burst: burst, buckets: map[string]*bucket{}, now: time.Now}
}

func (l *Limiter) get(key string, now time.Time) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A bucket idle for the time it takes to refill completely is the same
	// as a new one: drop it.
	idle := l.every * time.Duration(l.burst)
	if now.Sub(l.lastSweep) > max(idle, time.Minute) {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > idle {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	return b.lim
}

// Allow takes a token from key's bucket, reporting whether there was one.
func (l *Limiter) Allow(key string) bool {
	now := l.now()
	return l.get(key, now).AllowN(now, 1)
}
