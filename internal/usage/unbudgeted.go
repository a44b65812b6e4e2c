package usage

import (
	"sync"
	"time"
)

// Most accounts have no budget, yet every activation and every LLM call
// asks which budgets apply to it: a query each time, for nothing. The
// service remembers for a short while that none applies to a user's app
// and key. A budget made or changed on this node forgets its user's
// entries at once; one made on another node (PostgreSQL) applies here
// within unbudgetedFor. Once a budget applies, every check reads what
// was spent, as before: nothing about the limits is remembered.

// unbudgetedFor is how long "no budget applies" is believed.
const unbudgetedFor = 2 * time.Second

// maxUnbudgeted bounds the entries remembered; beyond it nothing more is
// remembered until the expired ones go.
const maxUnbudgeted = 100_000

type scopeKey struct {
	user, app string
	key       int64
}

type unbudgeted struct {
	mu    sync.Mutex
	until map[scopeKey]time.Time
	// forgets counts forget calls: an answer read before one is not
	// remembered after it.
	forgets uint64
}

// known reports whether no budget was found to apply to k lately, and
// the count to hand remember if the database is asked.
func (u *unbudgeted) known(k scopeKey, now time.Time) (bool, uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.until[k]
	return ok && now.Before(t), u.forgets
}

// remember notes that no budget applied to k when the database was asked,
// unless a budget changed since (forgets is known's).
func (u *unbudgeted) remember(k scopeKey, now time.Time, forgets uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if forgets != u.forgets {
		return
	}
	if u.until == nil {
		u.until = map[scopeKey]time.Time{}
	}
	if len(u.until) >= maxUnbudgeted {
		for k, t := range u.until {
			if !now.Before(t) {
				delete(u.until, k)
			}
		}
		if len(u.until) >= maxUnbudgeted {
			return
		}
	}
	u.until[k] = now.Add(unbudgetedFor)
}

// forget drops what is remembered of user's scopes: a budget of theirs
// was made or changed.
func (u *unbudgeted) forget(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.forgets++
	for k := range u.until {
		if k.user == user {
			delete(u.until, k)
		}
	}
}
