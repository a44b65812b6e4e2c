package credential

import (
	"context"
	"errors"
	"time"

	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// leaseTTL bounds how long a refresh may hold its lease: longer than a
// provider call may take, so a live holder never loses it, short enough
// that a dead one's connection is refreshed again soon.
const leaseTTL = time.Minute

// waitStep is how often a refresh waiting on another process's lease looks
// again.
const waitStep = 20 * time.Millisecond

// refresh brings conn's tokens up to date and answers the connection as
// stored afterwards, whatever the outcome (its status and last_error say
// how the refresh went); an error is a failure of the platform itself.
//
// Exactly one refresh per connection reaches the provider at a time:
// concurrent callers in this process share one (singleflight), and
// across processes the store's lease admits one holder while the others
// wait for its outcome. A caller that finds the connection changed since
// it read it (another refresh, a reconnection) takes that instead of
// refreshing again, unless force asks for a refresh of its own and none
// has happened since.
func (s *Service) refresh(ctx context.Context, conn *store.Connection, force bool) (*store.Connection, error) {
	seen := conn.Version
	ch := s.flight.DoChan(conn.ID, func() (any, error) {
		// The shared refresh must not end when the first caller gives
		// up: the others wait for it, and a refresh cut off mid-call
		// could lose a rotated refresh token.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTTL)
		defer cancel()
		return s.refreshOnce(ctx, conn.ID, seen, force)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*store.Connection), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Service) refreshOnce(ctx context.Context, id string, seen int64, force bool) (*store.Connection, error) {
	for {
		conn, err := s.store.ConnectionGet(ctx, id)
		if err != nil {
			return nil, err
		}
		if conn.Version != seen || conn.Status == store.ConnDisconnected || conn.RefreshTokenEnc == "" {
			return conn, nil
		}
		now := s.now()
		ok, err := s.store.TakeLease(ctx, "connections", id, s.node, now, now.Add(leaseTTL))
		if err != nil {
			return nil, err
		}
		if ok {
			return s.refreshHeld(ctx, id, seen)
		}
		select {
		case <-time.After(waitStep):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// refreshHeld refreshes connection id under this node's lease: the
// provider call outside any transaction, then the outcome and its events
// in one.
func (s *Service) refreshHeld(ctx context.Context, id string, seen int64) (*store.Connection, error) {
	release := func() {
		if err := s.store.ReleaseLease(context.WithoutCancel(ctx), "connections", id, s.node); err != nil {
			s.log.Warn("credential: release lease", "connection_id", id, "err", err)
		}
	}
	// Read again under the lease: the refresh that held it before may
	// have ended between our read and our taking it.
	conn, err := s.store.ConnectionGet(ctx, id)
	if err != nil {
		release()
		return nil, err
	}
	if conn.Version != seen {
		release()
		return conn, nil
	}
	a, err := s.store.AuthenticatorGet(ctx, conn.AuthenticatorID)
	if err != nil {
		release()
		return nil, err
	}
	flow, err := s.flow(a)
	if err != nil {
		release()
		return nil, err
	}
	refreshToken, err := s.box.Open(conn.RefreshTokenEnc)
	if err != nil {
		release()
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, s.opts.ProviderTimeout)
	tok, callErr := flow.Refresh(pctx, refreshToken, conn.Scopes)
	cancel()

	from := conn.Status
	now := s.now()
	next := *conn
	next.UpdatedAt = now
	switch {
	case callErr == nil:
		if err := s.setTokens(&next, tok, now); err != nil {
			release()
			return nil, err
		}
	case oauth.IsInvalidGrant(callErr):
		// The grant is gone for good: nothing left to retry, and tokens
		// that no longer work are not kept.
		next.Status, next.LastError = store.ConnDisconnected, oauth.Describe(callErr)
		next.AccessTokenEnc, next.RefreshTokenEnc, next.NextRefreshAt = "", "", nil
	default:
		next.RefreshFailures++
		retry := now.Add(Backoff(next.RefreshFailures))
		next.Status, next.LastError, next.NextRefreshAt = store.ConnRefreshFailing, oauth.Describe(callErr), &retry
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.ConnectionFinishRefresh(ctx, &next, seen); err != nil {
			return err
		}
		return s.announce(ctx, tx, a, from, &next)
	})
	if errors.Is(err, store.ErrConnectionChanged) {
		// Reconnected meanwhile: the new tokens win, ours are of the old
		// grant.
		release()
		return s.store.ConnectionGet(ctx, id)
	}
	if err != nil {
		release()
		return nil, err
	}
	if callErr != nil {
		s.log.Warn("credential: refresh failed", "connection_id", id, "status", next.Status, "reason", next.LastError)
	}
	return &next, nil
}

// setTokens seals tok into c as a healthy connection's. A provider that
// does not rotate refresh tokens answers none: the old one stays.
func (s *Service) setTokens(c *store.Connection, tok *oauth.Token, now time.Time) error {
	access, err := s.box.Seal(tok.AccessToken)
	if err != nil {
		return err
	}
	c.AccessTokenEnc = access
	if tok.RefreshToken != "" {
		if c.RefreshTokenEnc, err = s.box.Seal(tok.RefreshToken); err != nil {
			return err
		}
	}
	c.TokenType = "Bearer"
	c.Scopes = tok.Scopes
	c.ExpiresAt = nil
	if !tok.Expiry.IsZero() {
		e := tok.Expiry.UTC().Truncate(time.Microsecond)
		c.ExpiresAt = &e
	}
	c.IssuedAt, c.LastRefreshed = &now, &now
	c.Status, c.LastError, c.RefreshFailures = store.ConnConnected, "", 0
	c.NextRefreshAt = nextRefresh(c, now)
	return nil
}

// nextRefresh is when the refresher should renew c's tokens: Lead before
// they expire, but for tokens that live less than twice that, halfway
// through their life, so that short-lived tokens are not refreshed on
// every scan. Nil when there is nothing to refresh.
func nextRefresh(c *store.Connection, now time.Time) *time.Time {
	if c.ExpiresAt == nil || c.RefreshTokenEnc == "" {
		return nil
	}
	at := c.ExpiresAt.Add(-Lead)
	if half := now.Add(c.ExpiresAt.Sub(now) / 2); half.After(at) {
		at = half
	}
	return &at
}

// Backoff is the delay before the next try after n failed refreshes in a
// row: 1, 2, 4 … minutes, at most an hour.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 7 {
		return time.Hour
	}
	return min(time.Minute<<(n-1), time.Hour)
}
