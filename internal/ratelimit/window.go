package ratelimit

import (
	"sync"
	"time"
)

// Window allows limit events per key in a window of period that starts at
// the key's first event; once they are spent, the key waits for the window
// to end. Unlike a token bucket, which gives one event back every
// period/limit, a spent window stays shut for the rest of its period: what
// "N failed logins a minute, then 429 until the minute has passed" means.
//
// An event is taken before the work it pays for and may be given back
// after (a login that succeeds), so that concurrent callers can never spend
// more than limit between them.
type Window struct {
	limit  int
	period time.Duration

	mu        sync.Mutex
	windows   map[string]*window
	lastSweep time.Time
	now       func() time.Time
}

type window struct {
	start time.Time
	n     int
}

// NewWindow allows limit events per key per period.
func NewWindow(limit int, period time.Duration) *Window {
	return &Window{limit: limit, period: period, windows: map[string]*window{}, now: time.Now}
}

// Take spends one of key's events. If none is left it reports false and
// spends nothing. Otherwise release gives the event back; calling it once
// the window has ended does nothing.
func (l *Window) Take(key string) (release func(), ok bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Ended windows are the same as absent ones: drop them, at most once a
	// period, so memory is bounded by the keys seen in the last period.
	if now.Sub(l.lastSweep) > l.period {
		for k, w := range l.windows {
			if now.Sub(w.start) >= l.period {
				delete(l.windows, k)
			}
		}
		l.lastSweep = now
	}
	w, found := l.windows[key]
	if !found || now.Sub(w.start) >= l.period {
		w = &window{start: now}
		l.windows[key] = w
	}
	if w.n >= l.limit {
		return nil, false
	}
	w.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if cur := l.windows[key]; cur == w && w.n > 0 {
				w.n--
			}
		})
	}, true
}
