package cli_test

import (
	"database/sql"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestTwoProcessesRefreshOnce: two platform processes on one PostgreSQL
// database find a connection's token expired at the same moment. One
// refresh reaches the provider (a second would reuse a rotated refresh
// token, which makes the provider kill the grant), and both processes
// hand out its new token.
func TestTwoProcessesRefreshOnce(t *testing.T) {
	t.Parallel()
	provider := oauthtest.New(t, oauthtest.Options{})
	dsn := testdb.URL(t, store.Postgres)
	env := environ(t.TempDir(), "AP_DATABASE_URL="+dsn, "AP_EGRESS_ALLOW="+egresstest.Allow, "AP_RATE_LIMIT=1000000",
		"AP_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	one := startServe(t, env)
	two := startServe(t, env)

	p := &platform{t: t, base: one.URL}
	creds := map[string]string{"email": "ada@example.com", "password": "password1", "confirm_password": "password1"}
	p.call("POST", "/api/v1/auth/register", "", creds, nil)
	var login struct {
		Token string `json:"access_token"`
	}
	p.call("POST", "/api/v1/auth/login", "", creds, &login)
	var key struct {
		Key string `json:"key"`
	}
	p.call("POST", "/api/v1/user/api-keys", login.Token, map[string]any{"name": "agent", "scopes": []string{"app:access", "write:all"}}, &key)
	var app struct {
		AppID string `json:"app_id"`
	}
	p.call("POST", "/api/v1/apps/import-manifest", key.Key, map[string]any{"name": "CRM", "slug": "crm", "version": "1.0.0",
		"authenticators": []any{map[string]any{"name": "crm", "authenticator_type": "custom", "client_id": "platform",
			"scopes": []string{"read"}, "authorize_url": provider.AuthorizeURL(), "token_url": provider.TokenURL()}}}, &app)
	var auths struct {
		Authenticators []struct {
			ID          string `json:"id"`
			RedirectURI string `json:"redirect_uri"`
		} `json:"authenticators"`
	}
	p.call("GET", "/api/v1/oauth/authenticators?app_id="+app.AppID, key.Key, nil, &auths)
	p.call("PATCH", "/api/v1/oauth/authenticators/"+auths.Authenticators[0].ID, key.Key, map[string]any{"client_secret": "cs"}, nil)
	provider.AddClient("platform", "cs", []string{auths.Authenticators[0].RedirectURI}, []string{"read"})

	// Connect, as the user's browser would (the session as a Bearer token
	// is the same session as the cookie).
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer noFollow.CloseIdleConnections()
	get := func(u, session string) *http.Response {
		req, err := http.NewRequest("GET", u, nil)
		require.NoError(t, err)
		if session != "" {
			req.Header.Set("Authorization", "Bearer "+session)
		}
		res, err := noFollow.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	base := "/api/v1/credentials/" + app.AppID + "/crm"
	res := get(one.URL+base+"/authorize", login.Token)
	require.Equal(t, http.StatusFound, res.StatusCode)
	res = get(res.Header.Get("Location")+"&login_as=ada", "")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	res = get(two.URL+"/api/v1/oauth/callback?"+back.RawQuery, login.Token)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the other process completes the flow")

	token := func(node *proc) string {
		var c struct {
			AccessToken string `json:"access_token"`
		}
		(&platform{t: t, base: node.URL}).call("GET", base, key.Key, nil, &c)
		require.NotEmpty(t, c.AccessToken)
		return c.AccessToken
	}
	old := token(one)
	require.Equal(t, old, token(two))

	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE connections SET expires_at = now() - interval '1 minute'`)
	require.NoError(t, err)
	provider.SetTokenDelay(300 * time.Millisecond)
	var wg sync.WaitGroup
	tokens := make([]string, 20)
	for i := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i] = token([]*proc{one, two}[i%2])
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, provider.Refreshes(), "one refresh across both processes")
	require.NotEqual(t, old, tokens[0])
	for _, tok := range tokens {
		require.Equal(t, tokens[0], tok)
	}
	one.stop()
	two.stop()
}
