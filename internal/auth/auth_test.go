package auth

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

func TestPasswordHashRoundTrip(t *testing.T) {
	t.Parallel()
	hash, err := HashPassword("correct horse battery staple", DefaultPasswordParams)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$"), hash)
	ok, err := VerifyPassword(hash, "correct horse battery staple")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = VerifyPassword(hash, "Correct horse battery staple")
	require.NoError(t, err)
	require.False(t, ok)

	again, err := HashPassword("correct horse battery staple", DefaultPasswordParams)
	require.NoError(t, err)
	require.NotEqual(t, hash, again, "a fresh salt every time")

	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=18$m=1,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=x$c2FsdA$aGFzaA", "$argon2id$v=19$m=1,t=1,p=1$!!$aGFzaA"} {
		_, err := VerifyPassword(bad, "x")
		require.Error(t, err, bad)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	a, ha := NewToken(PrefixAPIKey)
	b, hb := NewToken(PrefixAPIKey)
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "ak_"))
	require.Len(t, a, 3+43)
	require.Equal(t, ha, HashToken(a))
	require.NotEqual(t, ha, hb)

	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer ": ""} {
		got, ok := BearerToken(header)
		require.Equal(t, want, got, header)
		require.Equal(t, want != "", ok, header)
	}
}

func TestAllow(t *testing.T) {
	t.Parallel()
	session := &Caller{Kind: KindSession}
	adminSession := &Caller{Kind: KindSession, IsAdmin: true}
	key := func(admin bool, scopes ...Scope) *Caller {
		return &Caller{Kind: KindAPIKey, IsAdmin: admin, Scopes: scopes}
	}
	boundKey := func(admin bool, scopes ...Scope) *Caller {
		c := key(admin, scopes...)
		c.AppID = "a"
		return c
	}
	agentKey := &Caller{Kind: KindAgentKey, AppID: "a", ActivationID: "x"}
	get, post := http.MethodGet, http.MethodPost
	for _, tc := range []struct {
		name   string
		caller *Caller
		rule   Rule
		method string
		want   error
	}{
		{"anonymous on public", nil, Public, post, nil},
		{"anonymous on user route", nil, User, get, ErrAuthRequired},
		{"session writes", session, User, post, nil},
		{"read key reads", key(false, ScopeRead), User, get, nil},
		{"read key heads", key(false, ScopeRead), User, http.MethodHead, nil},
		{"read key cannot write", key(false, ScopeRead), User, post, ErrForbidden},
		{"write key writes", key(false, ScopeWrite), User, post, nil},
		{"app key on app route", key(false, ScopeAppAccess), AppUse, post, nil},
		{"app key elsewhere", key(false, ScopeAppAccess), User, get, ErrForbidden},
		{"keys cannot manage keys", key(true, ScopeAdmin), SessionOnly, get, ErrForbidden},
		{"session manages keys", session, SessionOnly, post, nil},
		{"user session on admin route", session, AdminOnly, get, ErrForbidden},
		{"admin session on admin route", adminSession, AdminOnly, get, nil},
		{"admin's write key on admin route", key(true, ScopeWrite), AdminOnly, get, ErrForbidden},
		{"admin's admin key on admin route", key(true, ScopeAdmin), AdminOnly, post, nil},
		{"non-admin's admin key on admin route", key(false, ScopeAdmin), AdminOnly, get, ErrForbidden},
		{"admin key anywhere", key(true, ScopeAdmin), User, post, nil},
		{"key on account route", key(false, ScopeWrite), Account, post, nil},
		{"app key reads the account's catalog", key(false, ScopeAppAccess), AccountRead, get, nil},
		{"bound key on account route", boundKey(true, ScopeAdmin), Account, get, ErrForbidden},
		{"bound app key on account read", boundKey(false, ScopeAppAccess), AccountRead, get, ErrForbidden},
		{"bound admin key on admin route", boundKey(true, ScopeAdmin), AdminOnly, get, ErrForbidden},
		{"bound key on its app's routes", boundKey(false, ScopeWrite), User, post, nil},
		{"agent key on app data", agentKey, AppData, post, nil},
		{"agent key on an app route", agentKey, AppUse, get, ErrForbidden},
		{"agent key on a user route", agentKey, User, get, ErrForbidden},
		{"agent key on an account read", agentKey, AccountRead, get, ErrForbidden},
		{"agent key on key management", agentKey, SessionOnly, get, ErrForbidden},
		{"admin's agent key on an admin route", &Caller{Kind: KindAgentKey, IsAdmin: true, AppID: "a"}, AdminOnly, get, ErrForbidden},
		{"app key on app data", key(false, ScopeAppAccess), AppData, post, nil},
		{"read key cannot write app data", key(false, ScopeRead), AppData, post, ErrForbidden},
	} {
		require.Equal(t, tc.want, Allow(tc.caller, tc.rule, tc.method), tc.name)
	}
	bound := boundKey(true, ScopeAdmin)
	require.NoError(t, AllowApp(bound, "a"))
	require.NoError(t, AllowApp(bound, ""), "routes without an app")
	require.Equal(t, ErrOtherApp, AllowApp(bound, "b"), "another app is absent")
	require.NoError(t, AllowApp(session, "b"))
	require.False(t, bound.CanAdmin(), "admin rights do not survive the binding")
	require.True(t, key(true, ScopeAdmin).CanAdmin())
	require.True(t, bound.SeesApp("a"))
	require.False(t, bound.SeesApp("b"))
	require.False(t, bound.SeesApp(""), "things outside every app")
	require.True(t, session.SeesApp(""))
	require.True(t, session.SeesApp("b"))
	require.Equal(t, ErrOtherApp, AllowApp(agentKey, "b"), "an agent key's other apps are absent")
	require.False(t, agentKey.SeesApp(""))
	require.False(t, (&Caller{Kind: KindAgentKey, IsAdmin: true, AppID: "a"}).CanAdmin())
}

// TestCheck: the one access check applies the identity's failure before
// the rule (except on public routes), and a page takes a session by
// cookie only.
func TestCheck(t *testing.T) {
	t.Parallel()
	session := &Caller{Kind: KindSession, UserID: "u"}
	key := &Caller{Kind: KindAPIKey, UserID: "u", Scopes: []Scope{ScopeWrite}}
	expired := apperr.New(apperr.Authentication, "Session expired")

	// A public route serves anyone, with the caller when there is a valid one.
	c, err := Check(Identity{Err: ErrAuthRequired}, Public, http.MethodGet)
	require.NoError(t, err)
	require.Nil(t, c)
	c, err = Check(Identity{Err: expired, Source: FromHeader}, Public, http.MethodPost)
	require.NoError(t, err)
	require.Nil(t, c)
	c, err = Check(Identity{Caller: key, Source: FromHeader}, Public, http.MethodGet)
	require.NoError(t, err)
	require.Same(t, key, c)

	// Any other route answers the credential's own failure, then the rule.
	_, err = Check(Identity{Err: expired, Source: FromHeader}, User, http.MethodGet)
	require.Same(t, expired, err)
	_, err = Check(Identity{Err: ErrAuthRequired}, AppUse, http.MethodGet)
	require.Same(t, ErrAuthRequired, err)
	_, err = Check(Identity{Caller: key, Source: FromHeader}, SessionOnly, http.MethodGet)
	require.Same(t, ErrForbidden, err)
	c, err = Check(Identity{Caller: key, Source: FromHeader}, User, http.MethodPost)
	require.NoError(t, err)
	require.Same(t, key, c)

	// A page: a session by its cookie, and nothing else.
	c, err = Check(Identity{Caller: session, Source: FromCookie}, Page, http.MethodGet)
	require.NoError(t, err)
	require.Same(t, session, c)
	for _, id := range []Identity{
		{Caller: session, Source: FromHeader},
		{Caller: session, Source: FromQuery},
		{Caller: key, Source: FromHeader},
		{Caller: &Caller{Kind: KindAPIKey, UserID: "u", Scopes: []Scope{ScopeWrite}}, Source: FromCookie},
		{Err: ErrAuthRequired},
	} {
		_, err = Check(id, Page, http.MethodGet)
		require.Error(t, err, "%+v", id)
	}
}

// TestNewHashesNothing: the hash an unknown email is verified against costs
// a verification like any stored one (same parameters, argon2id run in
// full) but no hash at start: a 19 MiB argon2 run in New was garbage a
// fresh server kept in its RSS. Not parallel: it reads the process's
// allocation counter.
func TestNewHashesNothing(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	svc, err := New(nil, nil, Options{})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "New allocates no argon2 memory")

	require.True(t, strings.HasPrefix(svc.dummyHash, "$argon2id$v=19$m=19456,t=2,p=1$"), svc.dummyHash)
	for _, pw := range []string{"", "not a password of anyone", "password1"} {
		ok, err := VerifyPassword(svc.dummyHash, pw)
		require.NoError(t, err)
		require.False(t, ok, "no password matches the dummy")
	}
	other, err := New(nil, nil, Options{})
	require.NoError(t, err)
	require.NotEqual(t, svc.dummyHash, other.dummyHash, "a fresh salt and key per service")
}
