package auth

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

var (
	errKeyNotFound = apperr.NotFoundf("API key not found")
	errAppNotFound = apperr.NotFoundf("App not found")
)

// KeyRequest is the create-key body.
type KeyRequest struct {
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
	AppID     string
}

// NewKey is a created key; Key is shown this once and never again.
type NewKey struct {
	store.APIKey
	Key string
}

// CreateAPIKey issues a key to the caller's user.
func (s *Service) CreateAPIKey(ctx context.Context, c *Caller, r KeyRequest) (*NewKey, error) {
	name := strings.TrimSpace(r.Name)
	if name == "" {
		return nil, apperr.Invalid("name", "Missing required field: name")
	}
	if utf8.RuneCountInString(name) > 100 {
		return nil, apperr.Invalid("name", "name must be at most 100 characters")
	}
	if len(r.Scopes) == 0 {
		return nil, apperr.Invalid("scopes", "Missing required field: scopes")
	}
	var scopes []string
	for i, sc := range r.Scopes {
		if !slices.Contains(Scopes, Scope(sc)) {
			return nil, apperr.Invalid("scopes["+strconv.Itoa(i)+"]",
				"Unknown scope "+strconv.Quote(sc)+": use read:all, write:all, admin or app:access")
		}
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	if slices.Contains(scopes, string(ScopeAdmin)) && !c.IsAdmin {
		return nil, ErrForbidden
	}
	now := s.now()
	if r.ExpiresAt != nil && !r.ExpiresAt.After(now) {
		return nil, apperr.Invalid("expires_at", "expires_at must be in the future")
	}
	if r.AppID != "" {
		if uuid.Validate(r.AppID) != nil {
			return nil, errAppNotFound
		}
		app, err := s.store.AppGet(ctx, r.AppID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && app.UserID != c.UserID) {
			return nil, errAppNotFound
		}
		if err != nil {
			return nil, err
		}
	}
	token, hash := NewToken(PrefixAPIKey)
	k := &NewKey{Key: token, APIKey: store.APIKey{
		UserID: c.UserID, Name: name, KeyHash: hash, KeyPrefix: token[:keyPrefixLen],
		Scopes: scopes, AppID: r.AppID, ExpiresAt: r.ExpiresAt, CreatedAt: now,
	}}
	if k.ExpiresAt != nil {
		t := k.ExpiresAt.UTC().Truncate(time.Microsecond)
		k.ExpiresAt = &t
	}
	if err := s.store.APIKeyCreateWithin(ctx, &k.APIKey, s.opts.Quotas.APIKeys); err != nil {
		return nil, s.opts.Quotas.FromStore(err)
	}
	return k, nil
}

// APIKeys returns a page of the caller's keys, newest first.
func (s *Service) APIKeys(ctx context.Context, c *Caller, limit, offset int) ([]store.APIKey, int, error) {
	return s.store.APIKeyListByUser(ctx, c.UserID, limit, offset)
}

// RevokeAPIKey deletes a key of the caller's (or, with a stated reason, an
// admin's revocation of another user's key).
func (s *Service) RevokeAPIKey(ctx context.Context, c *Caller, id int64) error {
	k, err := s.store.APIKeyGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return errKeyNotFound
	}
	if err != nil {
		return err
	}
	r := Resource{Type: "api_key", ID: strconv.FormatInt(k.ID, 10), OwnerID: k.UserID}
	if err := s.Reach(ctx, c, r, "api_key.revoke", errKeyNotFound); err != nil {
		return err
	}
	err = s.store.APIKeyDelete(ctx, id)
	s.keys.forget()
	if errors.Is(err, store.ErrNotFound) {
		return errKeyNotFound
	}
	if err == nil {
		s.CredentialsChanged(ctx, k.UserID)
	}
	return err
}
