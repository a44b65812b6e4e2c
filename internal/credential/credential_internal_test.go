package credential

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackoffGrowsToAnHour(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, Backoff(n))
	}
	m := time.Minute
	require.Equal(t, []time.Duration{m, 2 * m, 4 * m, 8 * m, 16 * m, 32 * m, time.Hour, time.Hour, time.Hour}, got)
	require.Equal(t, m, Backoff(0))
}

func TestNextRefresh(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(life time.Duration, refresh string) *time.Time {
		e := now.Add(life)
		return nextRefresh(&store.Connection{ExpiresAt: &e, RefreshTokenEnc: refresh}, now)
	}
	require.Equal(t, now.Add(55*time.Minute), *at(time.Hour, "r"), "five minutes ahead")
	require.Equal(t, now.Add(3*time.Minute), *at(6*time.Minute, "r"), "halfway through a short life")
	require.Nil(t, at(time.Hour, ""), "nothing to refresh with")
	require.Nil(t, nextRefresh(&store.Connection{RefreshTokenEnc: "r"}, now), "a token that does not expire")
}

func TestExpiredLeavesAMargin(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	conn := func(issued, expires time.Duration) *store.Connection {
		i, e := now.Add(issued), now.Add(expires)
		return &store.Connection{IssuedAt: &i, ExpiresAt: &e}
	}
	require.False(t, expired(conn(-time.Minute, time.Hour), now))
	require.True(t, expired(conn(-time.Hour, 5*time.Second), now), "10 s of margin for a long-lived token")
	require.False(t, expired(conn(0, 4*time.Second), now), "a quarter of a short life")
	require.True(t, expired(conn(-3*time.Second, time.Second/2), now))
	require.False(t, expired(&store.Connection{}, now), "no expiry")
}

func TestReturnToStaysOnTheOrigin(t *testing.T) {
	t.Parallel()
	s := &Service{opts: Options{PublicURL: "https://ap.example.com"}}
	for _, ok := range []string{"/", "/apps/x/connections?tab=1", "https://ap.example.com/apps"} {
		got, err := s.returnTo(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, got)
	}
	got, err := s.returnTo("")
	require.NoError(t, err)
	require.Equal(t, "/", got)
	for _, bad := range []string{"//evil.example", "/\\evil.example", "https://evil.example/", "http://ap.example.com/",
		"https://user@ap.example.com/", "javascript:alert(1)", "apps", "/x\r\nLocation: https://evil.example"} {
		_, err := s.returnTo(bad)
		require.Error(t, err, bad)
	}
}

func TestErrorCode(t *testing.T) {
	t.Parallel()
	require.Equal(t, "access_denied", errorCode("access_denied"))
	require.Equal(t, "provider_error", errorCode("<script>"))
	require.Equal(t, "provider_error", errorCode("Access Denied"))
}
