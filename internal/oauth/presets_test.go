package oauth_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/oauth"
)

func TestTypes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"custom", "google", "microsoft", "slack", "yahoo"}, oauth.Types())
}

// authURL is the authorize URL of c's flow, parsed.
func authURL(t *testing.T, c oauth.Client, verifier string) *url.URL {
	t.Helper()
	f, err := oauth.New(c, nil)
	require.NoError(t, err)
	u, err := url.Parse(f.AuthURL("the-state", verifier))
	require.NoError(t, err)
	require.Equal(t, "the-state", u.Query().Get("state"))
	require.Equal(t, "code", u.Query().Get("response_type"))
	return u
}

func TestPresetEndpoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ  string
		conf oauth.Configuration
		want oauth.Endpoints
	}{
		{"google", nil, oauth.Endpoints{AuthorizeURL: "https://accounts.google.com/o/oauth2/v2/auth", TokenURL: "https://oauth2.googleapis.com/token",
			RevokeURL: "https://oauth2.googleapis.com/revoke", UserinfoURL: "https://openidconnect.googleapis.com/v1/userinfo"}},
		{"slack", nil, oauth.Endpoints{AuthorizeURL: "https://slack.com/oauth/v2/authorize", TokenURL: "https://slack.com/api/oauth.v2.access",
			RevokeURL: "https://slack.com/api/auth.revoke", UserinfoURL: "https://slack.com/api/openid.connect.userInfo"}},
		{"microsoft", nil, oauth.Endpoints{AuthorizeURL: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
			TokenURL: "https://login.microsoftonline.com/common/oauth2/v2.0/token", UserinfoURL: "https://graph.microsoft.com/oidc/userinfo"}},
		{"microsoft", oauth.Configuration{"tenant": "contoso.onmicrosoft.com"}, oauth.Endpoints{
			AuthorizeURL: "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize",
			TokenURL:     "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token", UserinfoURL: "https://graph.microsoft.com/oidc/userinfo"}},
		{"yahoo", nil, oauth.Endpoints{AuthorizeURL: "https://api.login.yahoo.com/oauth2/request_auth", TokenURL: "https://api.login.yahoo.com/oauth2/get_token",
			UserinfoURL: "https://api.login.yahoo.com/openid/v1/userinfo"}},
		{"custom", oauth.Configuration{"userinfo_url": "https://id.example.com/me"}, oauth.Endpoints{UserinfoURL: "https://id.example.com/me"}},
	} {
		require.Equal(t, tc.want, oauth.Presets[tc.typ].Endpoints(tc.conf), "%s %v", tc.typ, tc.conf)
	}
}

func TestClientIDFormats(t *testing.T) {
	t.Parallel()
	for typ, ids := range map[string]struct{ good, bad []string }{
		"google": {good: []string{"1234-abc.apps.googleusercontent.com"},
			bad: []string{"1234-abc", ".apps.googleusercontent.com", "a b.apps.googleusercontent.com", "x.apps.googleusercontent.com.evil"}},
		"slack":     {good: []string{"1234567890.0987654321"}, bad: []string{"1234567890", "12.ab", "1.2.3", " 1.2"}},
		"microsoft": {good: []string{"3fa85f64-5717-4562-b3fc-2c963f66afa6"}, bad: []string{"3fa85f6457174562b3fc2c963f66afa6", "{3fa85f64-5717-4562-b3fc-2c963f66afa6}", "app"}},
		"yahoo":     {good: []string{"dj0yJmk9aGVsbG8mZD1ZV2s5--", "a+b/c="}, bad: []string{"has space", "semi;colon", "ünï"}},
		"custom":    {good: []string{"anything at all"}},
	} {
		p := oauth.Presets[typ]
		for _, id := range ids.good {
			require.Empty(t, p.CheckClientID(id), "%s %q", typ, id)
		}
		for _, id := range ids.bad {
			require.NotEmpty(t, p.CheckClientID(id), "%s %q", typ, id)
		}
	}
}

func TestAuthURLParameters(t *testing.T) {
	t.Parallel()
	client := func(typ string, conf oauth.Configuration, scopes ...string) oauth.Client {
		return oauth.Client{Type: typ, ClientID: "id", ClientSecret: "s", Scopes: scopes, RedirectURI: "https://ap.example.org/api/v1/oauth/callback",
			Configuration: conf}
	}

	// Google: offline access by default, so a refresh token comes.
	u := authURL(t, client("google", nil, "openid", "email"), "")
	require.Equal(t, "accounts.google.com", u.Host)
	q := u.Query()
	require.Equal(t, "offline", q.Get("access_type"))
	require.Equal(t, "openid email", q.Get("scope"))
	require.Equal(t, "https://ap.example.org/api/v1/oauth/callback", q.Get("redirect_uri"))
	require.Empty(t, q.Get("code_challenge"), "no PKCE without a verifier")
	q = authURL(t, client("google", oauth.Configuration{"access_type": "online", "prompt": "consent", "include_granted_scopes": true,
		"team": "T1"}, "openid"), "").Query()
	require.Equal(t, "online", q.Get("access_type"))
	require.Equal(t, "consent", q.Get("prompt"))
	require.Equal(t, "true", q.Get("include_granted_scopes"))
	require.False(t, q.Has("team"), "not a Google parameter")

	// PKCE: S256 when a verifier is given.
	q = authURL(t, client("google", oauth.Configuration{"pkce_enabled": true}, "openid"), "a-verifier-of-at-least-43-characters-aaaaaaaaaa").Query()
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.NotEmpty(t, q.Get("code_challenge"))

	// Slack: comma-joined scopes, its own parameters.
	q = authURL(t, client("slack", oauth.Configuration{"user_scope": "search:read,chat:write", "team": "T123", "prompt": "x"},
		"channels:read", "chat:write"), "").Query()
	require.Equal(t, "channels:read,chat:write", q.Get("scope"))
	require.Equal(t, "search:read,chat:write", q.Get("user_scope"))
	require.Equal(t, "T123", q.Get("team"))
	require.False(t, q.Has("prompt"))
	// scope_separator overrides the preset's.
	q = authURL(t, client("slack", oauth.Configuration{"scope_separator": " "}, "a", "b"), "").Query()
	require.Equal(t, "a b", q.Get("scope"))
	q = authURL(t, client("custom", oauth.Configuration{"scope_separator": "+"}, "a", "b"), "").Query()
	require.Equal(t, "a+b", q.Get("scope"))

	// Microsoft: the tenant's endpoints.
	u = authURL(t, client("microsoft", oauth.Configuration{"tenant": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "response_mode": "query"}, "User.Read"), "")
	require.Equal(t, "/3fa85f64-5717-4562-b3fc-2c963f66afa6/oauth2/v2.0/authorize", u.Path)
	require.Equal(t, "query", u.Query().Get("response_mode"))
	require.Equal(t, "/common/oauth2/v2.0/authorize", authURL(t, client("microsoft", nil, "User.Read"), "").Path)

	// Yahoo: prompt only.
	q = authURL(t, client("yahoo", oauth.Configuration{"prompt": "login", "access_type": "offline"}, "openid"), "").Query()
	require.Equal(t, "login", q.Get("prompt"))
	require.False(t, q.Has("access_type"))

	// An authorize_url of the authenticator's own wins over the preset's.
	c := client("google", nil, "openid")
	c.AuthorizeURL = "https://accounts.example.com/auth"
	require.Equal(t, "accounts.example.com", authURL(t, c, "").Host)
}

func TestCheckConfiguration(t *testing.T) {
	t.Parallel()
	good := oauth.Configuration{"access_type": "offline", "prompt": "consent", "include_granted_scopes": true, "approval_prompt": "force",
		"user_scope": "a,b", "team": "T1", "tenant": "organizations", "response_mode": "query", "resource": "https://graph.microsoft.com",
		"response_type": "code", "token_endpoint_auth_method": "client_secret_post", "grant_type": "authorization_code",
		"pkce_enabled": false, "scope_separator": ",", "something_else": map[string]any{"kept": 1}}
	key, problem := oauth.CheckConfiguration("microsoft", good)
	require.Empty(t, key, problem)
	key, problem = oauth.CheckConfiguration("custom", oauth.Configuration{"userinfo_url": "https://id.example.com/me"})
	require.Empty(t, key, problem)

	for _, tc := range []struct {
		typ     string
		conf    oauth.Configuration
		key     string
		problem string
	}{
		{"google", oauth.Configuration{"pkce_enabled": "yes"}, "pkce_enabled", "expected a boolean"},
		{"google", oauth.Configuration{"include_granted_scopes": 1}, "include_granted_scopes", "expected a boolean"},
		{"google", oauth.Configuration{"prompt": true}, "prompt", "expected a string"},
		{"slack", oauth.Configuration{"user_scope": []any{"a"}}, "user_scope", "expected a string"},
		{"custom", oauth.Configuration{"response_type": "token"}, "response_type", "only code"},
		{"custom", oauth.Configuration{"grant_type": "client_credentials"}, "grant_type", "only authorization_code"},
		{"custom", oauth.Configuration{"token_endpoint_auth_method": "private_key_jwt"}, "token_endpoint_auth_method", "client_secret_basic, client_secret_post"},
		{"custom", oauth.Configuration{"scope_separator": ", "}, "scope_separator", "one character"},
		{"custom", oauth.Configuration{"scope_separator": ""}, "scope_separator", "one character"},
		{"custom", oauth.Configuration{"userinfo_url": "ftp://id.example.com"}, "userinfo_url", "http or https"},
		{"custom", oauth.Configuration{"userinfo_url": "/me"}, "userinfo_url", "http or https"},
		{"google", oauth.Configuration{"userinfo_url": "https://id.example.com/me"}, "userinfo_url", "only a custom"},
		{"microsoft", oauth.Configuration{"tenant": "../evil"}, "tenant", "tenant id (GUID) or a domain name"},
		{"microsoft", oauth.Configuration{"tenant": "localhost"}, "tenant", "domain name"},
		{"microsoft", oauth.Configuration{"tenant": 5}, "tenant", "expected a string"},
	} {
		key, problem := oauth.CheckConfiguration(tc.typ, tc.conf)
		require.Equal(t, tc.key, key, "%v", tc.conf)
		require.Contains(t, problem, tc.problem, "%v", tc.conf)
	}
}

func TestUserInfoMapping(t *testing.T) {
	t.Parallel()
	oidc := map[string]any{"sub": "108", "email": "ada@example.com", "email_verified": true, "name": "Ada", "picture": "https://p.example.com/a.png"}
	want := oauth.UserInfo{Email: "ada@example.com", Name: "Ada", ProviderUserID: "108", Verified: true, Picture: "https://p.example.com/a.png"}
	for _, typ := range []string{"google", "yahoo", "custom"} {
		require.Equal(t, want, oauth.Presets[typ].UserInfo(oidc), typ)
	}
	require.Equal(t, oauth.UserInfo{Email: "ada@contoso.com", Name: "Ada", ProviderUserID: "AAA"},
		oauth.Presets["microsoft"].UserInfo(map[string]any{"sub": "AAA", "name": "Ada", "preferred_username": "ada@contoso.com"}))
	require.Equal(t, oauth.UserInfo{Email: "ada@example.com", Name: "Ada", ProviderUserID: "U0R7JM", Verified: true, Picture: "https://s.example.com/192.png"},
		oauth.Presets["slack"].UserInfo(map[string]any{"sub": "U0R7JM-sub", "https://slack.com/user_id": "U0R7JM", "https://slack.com/team_id": "T0R7GR",
			"email": "ada@example.com", "email_verified": true, "given_name": "Ada", "https://slack.com/user_image_192": "https://s.example.com/192.png"}))
	require.Equal(t, "42", oauth.Presets["custom"].UserInfo(map[string]any{"id": 42.0}).ProviderUserID, "numeric ids are kept whole")
}
