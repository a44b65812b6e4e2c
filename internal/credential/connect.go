package credential

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/localpath"
	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// StateTTL is how long an issued authorization flow may take.
const StateTTL = 10 * time.Minute

// CallbackPath is the platform's OAuth redirect endpoint.
const CallbackPath = "/api/v1/oauth/callback"

// AuthURL is get_auth_url (and initiate_auth's redirect): the provider's
// authorize URL for c to connect provider in appID, with a random
// single-use state bound to c's user, the app and the authenticator, and
// a PKCE S256 challenge when the authenticator enables it. returnTo is
// where the callback sends the browser afterwards: this platform's own
// origin only. An authenticator without its client secret is a 409: the
// flow could only fail at the token exchange.
func (s *Service) AuthURL(ctx context.Context, c *auth.Caller, appID, provider, returnTo string) (string, error) {
	back, err := s.returnTo(returnTo)
	if err != nil {
		return "", err
	}
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return "", err
	}
	if t.auth.ClientSecretEnc == "" {
		// The provider would refuse the code exchange at the very end, after
		// the user consented: say so before sending anyone there.
		return "", apperr.Newf(apperr.Conflict, "The authenticator %q has no client_secret yet: set it (PATCH /api/v1/oauth/authenticators/%s "+
			"with client_secret, or on the app's connections page) before connecting", provider, t.auth.ID)
	}
	flow, err := s.flow(t.auth)
	if err != nil {
		return "", err
	}
	state := rand.Text()
	verifier, verifierEnc := "", ""
	if pkce(t.auth) {
		verifier = oauth2.GenerateVerifier()
		if verifierEnc, err = s.box.Seal(verifier); err != nil {
			return "", err
		}
	}
	now := s.now()
	err = s.store.OAuthStateCreate(ctx, &store.OAuthState{StateHash: stateHash(state), UserID: c.UserID, AppID: appID,
		AuthenticatorID: t.auth.ID, VerifierEnc: verifierEnc, ReturnTo: back, ExpiresAt: now.Add(StateTTL), CreatedAt: now})
	if err != nil {
		return "", err
	}
	return flow.AuthURL(state, verifier), nil
}

func pkce(a *store.Authenticator) bool {
	conf, err := configuration(a)
	return err == nil && conf.Bool("pkce_enabled")
}

func stateHash(state string) []byte {
	h := sha256.Sum256([]byte(state))
	return h[:]
}

// returnTo checks where a flow may send the browser back: a path on this
// platform, or a URL on its public origin; anything else would make the
// callback an open redirect. "" is the platform's home page.
func (s *Service) returnTo(raw string) (string, error) {
	if raw == "" {
		return "/", nil
	}
	if localpath.Is(raw) {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err == nil && !strings.ContainsAny(raw, "\\\r\n\t") && u.User == nil && u.Scheme+"://"+u.Host == s.origin() {
		return raw, nil
	}
	return "", apperr.Invalid("return_to", "Invalid value for field return_to: must be a path on this platform or a URL on "+s.origin())
}

func (s *Service) origin() string {
	u, err := url.Parse(s.opts.PublicURL)
	if err != nil {
		return s.opts.PublicURL
	}
	return u.Scheme + "://" + u.Host
}

// Callback is the end of the flow (handle_callback): the state is checked
// and used up, the code exchanged at the token URL with the PKCE verifier,
// the tokens sealed and stored as c's connection, and the answer is where
// to send the browser: return_to with ?connected=<provider>, or ?error=
// when the provider refused. Only the browser of the user who started the
// flow may complete it (a session of that user; otherwise 403), so nobody
// can plant their account in someone else's. A tampered, replayed or
// expired state is refused, and nothing is stored.
func (s *Service) Callback(ctx context.Context, c *auth.Caller, code, state, providerError string) (string, error) {
	if state == "" {
		return "", apperr.Invalid("state", "Missing required field: state")
	}
	hash := stateHash(state)
	st, err := s.store.OAuthStateGet(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return "", errBadState
	}
	if err != nil {
		return "", err
	}
	if c == nil || c.Kind != auth.KindSession || c.UserID != st.UserID {
		return "", apperr.New(apperr.Permission,
			"Complete the connection in a browser logged in as the user who started it")
	}
	// Used up before anything else happens: a replay finds nothing.
	if st, err = s.store.OAuthStateTake(ctx, hash); errors.Is(err, store.ErrNotFound) {
		return "", errBadState
	} else if err != nil {
		return "", err
	}
	if !s.now().Before(st.ExpiresAt) {
		return "", apperr.Invalid("state", "The connection attempt expired (10 minutes): start it again")
	}
	a, err := s.store.AuthenticatorGet(ctx, st.AuthenticatorID)
	if errors.Is(err, store.ErrNotFound) {
		return "", errBadState
	}
	if err != nil {
		return "", err
	}
	if providerError != "" {
		return withQuery(st.ReturnTo, "error", errorCode(providerError), a.Name), nil
	}
	if code == "" {
		return "", apperr.Invalid("code", "Missing required field: code")
	}
	flow, err := s.flow(a)
	if err != nil {
		return "", err
	}
	verifier := ""
	if st.VerifierEnc != "" {
		if verifier, err = s.box.Open(st.VerifierEnc); err != nil {
			return "", err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, s.opts.ProviderTimeout)
	tok, err := flow.Exchange(pctx, code, verifier)
	cancel()
	if err != nil {
		s.log.Warn("credential: code exchange failed", "authenticator_id", a.ID, "reason", oauth.Describe(err))
		return withQuery(st.ReturnTo, "error", "token_exchange_failed", a.Name), nil
	}
	if err := s.connect(ctx, a, st.UserID, tok); err != nil {
		return "", err
	}
	return withQuery(st.ReturnTo, "connected", a.Name, ""), nil
}

// errorCode is a provider's error parameter as passed on to return_to:
// an RFC 6749 error code is letters and underscores; anything else is not
// repeated to the page.
func errorCode(s string) string {
	if len(s) > 64 || strings.IndexFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && r != '_' }) >= 0 {
		return "provider_error"
	}
	return s
}

var errBadState = apperr.Invalid("state", "Unknown, tampered or already used state: start the connection again")

// connect stores tok as userID's connection to a, replacing an earlier
// one, and announces the change of status.
func (s *Service) connect(ctx context.Context, a *store.Authenticator, userID string, tok *oauth.Token) error {
	now := s.now()
	conn := &store.Connection{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, AppID: a.AppID, AuthenticatorID: a.ID,
		ConnectedAt: now, UpdatedAt: now}
	if err := s.setTokens(conn, tok, now); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		from := ""
		if t, err := tx.CredentialTargetGet(ctx, userID, a.AppID, a.Name); err == nil && t.Connection != nil {
			from = t.Connection.Status
		}
		if err := tx.ConnectionSave(ctx, conn); err != nil {
			return err
		}
		return s.announce(ctx, tx, a, from, conn)
	})
}

// withQuery adds key=value (and provider=) to a return_to URL.
func withQuery(raw, key, value, provider string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "/"
	}
	q := u.Query()
	q.Set(key, value)
	if provider != "" {
		q.Set("provider", provider)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
