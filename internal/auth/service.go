// Package auth owns who a caller is and what they may do: users and their
// argon2id passwords, server-side sessions, API keys (stored only as SHA-256
// hashes), scopes and the per-route rules, and the admin bypass of user
// isolation with its audit log. The API layer calls Authenticate once per
// request and Allow with the route's Rule; domain code calls Reach before
// touching a resource that belongs to a user.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The public errors of authentication, with the contract's texts.
var (
	ErrAuthRequired   = apperr.New(apperr.Authentication, "Authentication required")
	ErrInvalidAPIKey  = apperr.New(apperr.Authentication, "Invalid API key")
	ErrInvalidSession = apperr.New(apperr.Authentication, "Invalid or expired session")
	ErrBadCredentials = apperr.New(apperr.Authentication, "Invalid email or password")
	ErrAccountOff     = apperr.New(apperr.Authentication, "Account is disabled")
	ErrForbidden      = apperr.Forbidden()
)

// Options tune the service.
type Options struct {
	SessionTTL       time.Duration
	RegistrationOpen bool
	Password         PasswordParams
	// HashSlots bounds the password hashes computed at once; zero means
	// runtime.GOMAXPROCS, at most MaxHashSlots. HashWait bounds the wait for a slot (then 429);
	// zero means DefaultHashWait.
	HashSlots int
	HashWait  time.Duration
	// MaxConnections caps a user's WebSocket and SSE connections on a node
	// (Hold); 0 means DefaultMaxConnections.
	MaxConnections int
	// Quotas bound a user's API keys (AP_QUOTA_API_KEYS); zero means the
	// defaults.
	Quotas quota.Limits
	// ReturnHashMemory gives the password hashes' memory back to the system
	// once hashing stops (hashing.go): the server's, which Close stops;
	// off for the CLI and for tests that build the service alone.
	ReturnHashMemory bool
}

// Service is the auth domain over the store.
type Service struct {
	store *store.Store
	log   *slog.Logger
	opts  Options
	// dummyHash is verified against when an email is unknown, so that a
	// login takes as long whether or not the account exists (the same
	// costs as a stored hash; unmatchableHash).
	dummyHash string
	hasher    *hasher
	now       func() time.Time
	keys      keyCache
	holds     holds
}

// New returns the service.
func New(s *store.Store, log *slog.Logger, opts Options) (*Service, error) {
	if opts.Password == (PasswordParams{}) {
		opts.Password = DefaultPasswordParams
	}
	dummy, err := unmatchableHash(opts.Password)
	if err != nil {
		return nil, err
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.Quotas == (quota.Limits{}) {
		opts.Quotas = quota.Defaults()
	}
	svc := &Service{store: s, log: log, opts: opts, dummyHash: dummy, now: store.Now,
		hasher: newHasher(opts.Password, opts.HashSlots, opts.HashWait)}
	if opts.ReturnHashMemory {
		svc.hasher.giveBack = debug.FreeOSMemory
	}
	svc.holds.gen.Store(1) // a Caller made elsewhere (gen 0) is checked when held
	return svc, nil
}

// Close stops giving the hashes' memory back, waiting for a return in
// progress. The service still hashes and verifies afterwards.
func (s *Service) Close() { s.hasher.close() }

// Authenticate resolves a bearer token or session cookie value.
func (s *Service) Authenticate(ctx context.Context, token string) (*Caller, error) {
	switch {
	case len(token) > len(PrefixSession) && token[:len(PrefixSession)] == PrefixSession:
		return s.authenticateSession(ctx, token)
	case len(token) > len(PrefixAPIKey) && token[:len(PrefixAPIKey)] == PrefixAPIKey:
		return s.authenticateKey(ctx, token)
	case len(token) > len(PrefixAgentKey) && token[:len(PrefixAgentKey)] == PrefixAgentKey:
		return s.authenticateAgentKey(ctx, token)
	}
	return nil, ErrInvalidAPIKey
}

func (s *Service) authenticateSession(ctx context.Context, token string) (*Caller, error) {
	changes := s.holds.gen.Load()
	hash := HashToken(token)
	sess, u, err := s.store.SessionGetByTokenHash(ctx, hash, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidSession
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(sess.TokenHash, hash) != 1 {
		return nil, ErrInvalidSession
	}
	if !u.IsActive {
		return nil, ErrAccountOff
	}
	return &Caller{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin, Kind: KindSession, SessionID: sess.ID,
		gen: changes, expires: sess.ExpiresAt}, nil
}

// touchEvery bounds how often last_used_at is written: a key used a thousand
// times a second must not cost a thousand writes.
const touchEvery = time.Minute

func (s *Service) authenticateKey(ctx context.Context, token string) (*Caller, error) {
	changes := s.holds.gen.Load()
	hash := HashToken(token)
	now := s.now()
	if c, ok := s.keys.get(hash, now); ok {
		c.gen = changes
		return c, nil
	}
	gen := s.keys.generation()
	k, u, err := s.store.APIKeyGetByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidAPIKey
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(k.KeyHash, hash) != 1 || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return nil, ErrInvalidAPIKey
	}
	if !u.IsActive {
		return nil, ErrAccountOff
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= touchEvery {
		if err := s.store.APIKeyTouch(ctx, k.ID, now); err != nil {
			s.log.WarnContext(ctx, "record api key use", "key_id", k.ID, "err", err)
		}
	}
	scopes := make([]Scope, len(k.Scopes))
	for i, sc := range k.Scopes {
		scopes[i] = Scope(sc)
	}
	c := &Caller{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin, Kind: KindAPIKey, KeyID: k.ID, Scopes: scopes, AppID: k.AppID, gen: changes}
	if k.ExpiresAt != nil {
		c.expires = *k.ExpiresAt
	}
	s.keys.put(gen, hash, c, k.ExpiresAt, now)
	return c, nil
}

// Resource names something that belongs to a user, for Reach.
type Resource struct {
	Type    string // e.g. "api_key"
	ID      string
	OwnerID string
	// AppID is the app the thing is part of; "" for things outside every
	// app (a key bound to one app does not see those).
	AppID string
}

// Reach decides whether c may act on r. A key bound to another app gets
// notFound (Caller.SeesApp). Owners may. Anyone else gets notFound
// (another user's thing is absent), except an admin who states a reason in
// X-Admin-Reason: that access is allowed and written to the audit log
// before it happens.
func (s *Service) Reach(ctx context.Context, c *Caller, r Resource, action string, notFound error) error {
	if c != nil && !c.SeesApp(r.AppID) {
		return notFound
	}
	if c != nil && c.UserID == r.OwnerID {
		return nil
	}
	if c == nil || !c.CanAdmin() || c.AdminReason == "" {
		return notFound
	}
	return s.store.AuditCreate(ctx, &store.AuditEntry{
		ActorID: c.UserID, Action: action, ResourceType: r.Type, ResourceID: r.ID,
		OwnerID: r.OwnerID, Reason: c.AdminReason, CreatedAt: s.now(),
	})
}

// AuditLog returns a page of the audit log, newest first.
func (s *Service) AuditLog(ctx context.Context, limit, offset int) ([]store.AuditEntry, int, error) {
	return s.store.AuditList(ctx, limit, offset)
}

// CleanupSessions deletes expired sessions, and the agent keys of runs
// that ended (refused already); a periodic job calls it hourly.
func (s *Service) CleanupSessions(ctx context.Context) (int64, error) {
	n, err := s.store.SessionDeleteExpired(ctx, s.now())
	if err != nil {
		return n, err
	}
	keys, err := s.store.AgentKeyDeleteEnded(ctx)
	return n + keys, err
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
