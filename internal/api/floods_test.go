package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// loginBurst sends n logins at once and counts the answers by status.
func (e *env) loginBurst(n int, email, password string, opts ...opt) map[int]int {
	e.t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			r := e.do("POST", "/api/v1/auth/login", form("email", email, "password", password), append(opts, acceptJSON)...)
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return counts
}

// A burst of concurrent guesses gets no more tries than a sequence would:
// the failure limit is taken before the password is checked.
func TestConcurrentFailedLoginsGetNoMoreTries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "10"})
		e.signup("u@example.com")
		counts := e.loginBurst(60, "u@example.com", "guess-guess")
		require.Equal(t, 60, counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests], "%v", counts)
		require.LessOrEqual(t, counts[http.StatusUnauthorized], 10, "401s (tries) of 60 concurrent failed logins: %v", counts)
		// The limit is spent: even the right password waits for the minute.
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON).
			expectError(t, 429, "RateLimitError", "Rate limit exceeded. Try again in 60 seconds.")
	})
}
