package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
)

// httpSeries counts the request series of a scrape.
func httpSeries(scrape []byte) int {
	n := 0
	for _, line := range bytes.Split(scrape, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("agentplatform_http_")) {
			n++
		}
	}
	return n
}

// TestMetricsLabelsAreClosedSets: invented methods and paths nobody
// registered add no series to /metrics (an unknown method is OTHER, an
// unmatched route one label), so strangers cannot grow it.
func TestMetricsLabelsAreClosedSets(t *testing.T) {
	t.Parallel()
	// Each request comes from an address of its own (through a trusted
	// proxy), so that the per-address rate limit, which this flood would
	// meet, leaves the labels to be what is measured.
	e := newEnv(t, store.SQLite, map[string]string{"AP_TRUSTED_PROXIES": "127.0.0.1/32"})
	flood := func(from, to int) {
		for i := from; i < to; i++ {
			from := header("X-Forwarded-For", fmt.Sprintf("10.1.%d.%d", i/250, i%250))
			r := e.do(fmt.Sprintf("M%dX", i), fmt.Sprintf("/nowhere/%d?x=%d", i, i), nil, from)
			require.Contains(t, []int{404, 405}, r.Status, "body: %s", r.Body)
			e.do(http.MethodGet, fmt.Sprintf("/api/v1/nothing-%d", i), nil, from).expect(t, 404)
			e.do(fmt.Sprintf("Z%d", i), "/api/v1/version", nil, from).expect(t, 405)
		}
	}
	flood(0, 20)
	e.scrape() // its own series appear after it answers
	before := e.scrape()
	flood(20, 120)
	after := e.scrape()
	require.Equal(t, httpSeries(before), httpSeries(after), "new series:\n%s", after)
	require.Contains(t, string(after), `method="OTHER"`)
	require.Contains(t, string(after), `route="unmatched"`)
	require.NotContains(t, string(after), "M21X")
	require.NotContains(t, string(after), "nothing-21")
}

// TestRateLimitBeforeRouting: the per-address limit applies to every
// request of an anonymous client, unmatched paths and pages included; an
// authenticated caller spends its user's budget once per request.
func TestRateLimitBeforeRouting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "10"})
	for range 10 {
		r := e.do("GET", "/nowhere/"+strings.Repeat("x", 3), nil)
		require.Equal(t, 404, r.Status)
	}
	// Outside /api/ a browser is refused with a page (internal/router), a
	// client that accepts JSON with the error body.
	e.do("GET", "/nowhere/else", nil, acceptJSON).expectError(t, 429, "RateLimitError", "Rate limit exceeded")
	require.Equal(t, 429, e.do("BREW", "/coffee", nil).Status)
	require.Equal(t, 429, e.do("GET", "/login", nil).Status)
	e.do("GET", "/healthz", nil).expect(t, 200) // probes are exempt

	// Another address is another budget (the test server sees 127.0.0.1
	// only; a session's user has a budget of its own).
	f := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "10"})
	token := f.signup("u@example.com") // 2 of the address's 10
	for i := range 10 {
		f.do("GET", "/api/v1/users/me", nil, bearer(token)).expect(t, 200)
		_ = i
	}
	f.do("GET", "/api/v1/users/me", nil, bearer(token)).expectError(t, 429, "RateLimitError", "Rate limit exceeded")
	require.Equal(t, 429, f.do("GET", "/nowhere", nil, bearer(token)).Status)
}
