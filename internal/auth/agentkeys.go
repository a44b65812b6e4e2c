package auth

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Agent keys (agk_…) are what a custom agent's code (or a webhook agent's
// receiver) calls the platform back with: each run of a custom agent gets
// one, bound to its user, its app and its activation, valid from the run's
// start until the activation ends.
//
// They are not cached the way API keys are (keycache.go): "refused at once
// after the end" then holds on every node with nothing to invalidate, and
// the read that checks one (by its hash's unique index, joined to its
// activation's status) is what a session costs. The status join makes the
// key refused by whatever ended the activation, a reaper or a cancel on
// another node included, with nothing to delete at the end: the rows of
// ended runs go hourly (CleanupSessions), so an end, which nearly never
// had a key, asks nothing of agent_keys. Agent keys cannot hold long-lived
// connections (Hold): the WebSocket and the streams are not theirs to open.

// ErrInvalidAgentKey answers an agent key that is unknown or whose run has
// ended.
var ErrInvalidAgentKey = apperr.New(apperr.Authentication, "Invalid agent key: an agent key is valid only while its activation runs")

// IssueAgentKey makes the key of a run of activation a and returns it;
// only its hash is stored, bound to a's user and app. A run that starts
// again replaces the key of the earlier one. An activation that is no
// longer running (cancelled before its run began) gets none:
// ErrActivationEnded.
func (s *Service) IssueAgentKey(ctx context.Context, a *store.Activation) (string, error) {
	token, hash := NewToken(PrefixAgentKey)
	err := s.store.AgentKeyPut(ctx, &store.AgentKey{ActivationID: a.ID, KeyHash: hash, CreatedAt: s.now()})
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrActivationEnded
	}
	if err != nil {
		return "", err
	}
	return token, nil
}

// ErrActivationEnded is IssueAgentKey's answer for an activation that is
// not running (or has no app).
var ErrActivationEnded = errors.New("auth: no agent key: the activation is not running")

func (s *Service) authenticateAgentKey(ctx context.Context, token string) (*Caller, error) {
	changes := s.holds.gen.Load()
	hash := HashToken(token)
	k, u, err := s.store.AgentKeyGetByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrInvalidAgentKey
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(k.KeyHash, hash) != 1 {
		return nil, ErrInvalidAgentKey
	}
	if !u.IsActive {
		return nil, ErrAccountOff
	}
	return &Caller{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin, Kind: KindAgentKey, ActivationID: k.ActivationID,
		AppID: k.AppID, gen: changes}, nil
}
