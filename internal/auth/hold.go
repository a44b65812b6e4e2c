package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// A long-lived connection (a WebSocket, an SSE stream) is authenticated
// once, when it opens, and may then run for hours. Hold keeps its credential
// under watch: the connection ends within a second of a logout, a
// revocation, a password change (for the user's other sessions), a disabled
// account or the credential's expiry, on whichever node it is held.
//
// Nothing is polled. Whatever ends credentials calls CredentialsChanged
// after its commit; that re-checks the held connections of that user on
// this node (one read per kind of credential, however many connections) and
// broadcasts the change so that the other nodes do the same
// (ChangedElsewhere). Expiry is a timer.
//
// Hold also caps the connections a user holds at once on a node.

// DefaultMaxConnections is the default cap on a user's held connections.
const DefaultMaxConnections = 100

// ChangeTopic names the broadcasts between nodes that a user's credentials
// changed (see SetBroadcast).
const ChangeTopic = "auth"

// holdCheckTimeout bounds the reads of one re-check.
const holdCheckTimeout = 5 * time.Second

// Hold is one long-lived connection's place and its credential's watch.
// Release it when the connection ends.
type Hold struct {
	s       *Service
	userID  string
	cred    credential
	ctx     context.Context
	cancel  context.CancelCauseFunc
	ended   chan struct{}
	endOnce sync.Once
	// timer ends the hold at the credential's expiry (guarded by holds.mu).
	timer    *time.Timer
	released bool // guarded by holds.mu
}

// credential names what authenticated a connection.
type credential struct {
	kind      Kind
	sessionID string
	keyID     int64
}

// holds are the held connections of this process.
type holds struct {
	mu     sync.Mutex
	byUser map[string]map[*Hold]struct{}
	// gen counts the credential changes this process has heard of. A
	// Caller records it when authenticated; a Hold taken after a change
	// checks its credential again before it counts as valid.
	gen atomic.Uint64
	// broadcast tells the other nodes about a change (nil: one node).
	broadcast atomic.Pointer[func(userID string)]

	// A check of every held connection (after the listener was down) runs
	// on its own goroutine, one at a time; again asks for one more.
	allMu      sync.Mutex
	allRunning bool
	allAgain   bool
}

// ErrTooManyConnections answers a connection beyond the per-user cap.
func errTooManyConnections(limit int) error {
	return apperr.Newf(apperr.RateLimit,
		"Too many open connections: at most %d WebSocket and SSE connections per user", limit)
}

// Hold takes one of c's user's connection places and watches c's
// credential. The connection must end when Ended is closed (Context is then
// done too) and call Release when it ends. A user at the cap gets a
// RateLimit error; a credential that ended since c was authenticated gets
// the authentication error a new request would.
func (s *Service) Hold(ctx context.Context, c *Caller) (*Hold, error) {
	if c.Kind == KindAgentKey {
		// A run's key calls the platform back; it does not listen to it
		// (agentkeys.go). Allow refuses it the routes that hold first.
		return nil, ErrForbidden
	}
	h := &Hold{s: s, userID: c.UserID, ended: make(chan struct{}),
		cred: credential{kind: c.Kind, sessionID: c.SessionID, keyID: c.KeyID}}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	limit := s.opts.MaxConnections
	s.holds.mu.Lock()
	set := s.holds.byUser[c.UserID]
	if len(set) >= limit {
		s.holds.mu.Unlock()
		h.cancel(nil)
		return nil, errTooManyConnections(limit)
	}
	if set == nil {
		if s.holds.byUser == nil {
			s.holds.byUser = map[string]map[*Hold]struct{}{}
		}
		set = map[*Hold]struct{}{}
		s.holds.byUser[c.UserID] = set
	}
	set[h] = struct{}{}
	s.holds.mu.Unlock()

	// Registered first, compared second: a change after this point
	// re-checks h; one before it shows in gen.
	expires := c.expires
	if c.gen != s.holds.gen.Load() {
		until, ok, err := s.credentialValid(ctx, c.UserID, h.cred)
		if err != nil || !ok {
			h.Release()
			if err != nil {
				return nil, err
			}
			return nil, h.cred.invalid()
		}
		expires = until
	}
	if !expires.IsZero() {
		s.holds.mu.Lock()
		if !h.released {
			h.timer = time.AfterFunc(expires.Sub(s.now()), h.end)
		}
		s.holds.mu.Unlock()
	}
	return h, nil
}

// Held counts userID's held connections on this node.
func (s *Service) Held(userID string) int {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	return len(s.holds.byUser[userID])
}

// Ended is closed when the credential stops being valid.
func (h *Hold) Ended() <-chan struct{} { return h.ended }

// Context is the context Hold was given, also cancelled when the credential
// ends (context.Cause is then ErrCredentialEnded).
func (h *Hold) Context() context.Context { return h.ctx }

// ErrCredentialEnded is the cause of a held context cancelled because its
// credential stopped being valid.
var ErrCredentialEnded = apperr.New(apperr.Authentication, "Credentials are no longer valid")

func (h *Hold) end() {
	h.endOnce.Do(func() {
		h.cancel(ErrCredentialEnded)
		close(h.ended)
	})
}

// Release frees the connection's place; safe to call more than once.
func (h *Hold) Release() {
	hs := &h.s.holds
	hs.mu.Lock()
	if !h.released {
		h.released = true
		if h.timer != nil {
			h.timer.Stop()
		}
		if set := hs.byUser[h.userID]; set != nil {
			delete(set, h)
			if len(set) == 0 {
				delete(hs.byUser, h.userID)
			}
		}
	}
	hs.mu.Unlock()
	h.cancel(context.Canceled)
}

func (c credential) invalid() error {
	if c.kind == KindSession {
		return ErrInvalidSession
	}
	return ErrInvalidAPIKey
}

// credentialValid reads whether c, of userID, is still valid and until
// when (zero: no expiry).
func (s *Service) credentialValid(ctx context.Context, userID string, c credential) (time.Time, bool, error) {
	valid, err := s.validCredentials(ctx, userID, map[credential]bool{c: true})
	until, ok := valid[c]
	return until, ok, err
}

// validCredentials returns which of userID's credentials in creds are still
// valid, with their expiry: one read per kind of credential.
func (s *Service) validCredentials(ctx context.Context, userID string, creds map[credential]bool) (map[credential]time.Time, error) {
	var sessionIDs []string
	var keyIDs []int64
	for c := range creds {
		switch c.kind {
		case KindSession:
			sessionIDs = append(sessionIDs, c.sessionID)
		case KindAPIKey:
			keyIDs = append(keyIDs, c.keyID)
		}
		// A kind of credential this check does not know is not kept open
		// on trust: whoever adds one adds its check here.
	}
	sessions, keys, err := s.store.CredentialsValid(ctx, userID, sessionIDs, keyIDs, s.now())
	if err != nil {
		return nil, err
	}
	valid := make(map[credential]time.Time, len(sessions)+len(keys))
	for id, until := range sessions {
		valid[credential{kind: KindSession, sessionID: id}] = until
	}
	for id, until := range keys {
		var t time.Time
		if until != nil {
			t = *until
		}
		valid[credential{kind: KindAPIKey, keyID: id}] = t
	}
	return valid, nil
}

// SetBroadcast sets how this process tells the other nodes that a user's
// credentials changed (the event bus's NOTIFY on PostgreSQL); they call
// ChangedElsewhere.
func (s *Service) SetBroadcast(fn func(userID string)) { s.holds.broadcast.Store(&fn) }

// CredentialsChanged is called after the commit of anything that may end
// credentials of userID (a logout, a revoked key, a new password, a
// disabled account, a deleted app with its bound keys): it ends the held
// connections whose credential is gone, on this node before it returns and
// on the other nodes soon after.
func (s *Service) CredentialsChanged(ctx context.Context, userID string) {
	if fn := s.holds.broadcast.Load(); fn != nil {
		(*fn)(userID)
	}
	s.recheck(context.WithoutCancel(ctx), userID)
}

// ChangedElsewhere is the broadcast of another node's CredentialsChanged.
// It checks userID's held connections before it returns, so that the
// events that node published after the change reach none of those whose
// credential it ended. "" means changes may have been missed (the listener
// was down): every held connection is checked, in the background.
func (s *Service) ChangedElsewhere(userID string) {
	// The key cache of this node may hold what another node revoked.
	s.keys.forget()
	s.holds.gen.Add(1)
	if userID != "" {
		s.recheck(context.Background(), userID)
		return
	}
	hs := &s.holds
	hs.allMu.Lock()
	defer hs.allMu.Unlock()
	if hs.allRunning {
		hs.allAgain = true
		return
	}
	hs.allRunning = true
	go func() {
		for {
			s.recheck(context.Background(), "")
			hs.allMu.Lock()
			again := hs.allAgain
			hs.allAgain, hs.allRunning = false, again
			hs.allMu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// recheck ends userID's held connections (every user's for "") whose
// credential is no longer valid.
func (s *Service) recheck(ctx context.Context, userID string) {
	s.keys.forget()
	s.holds.gen.Add(1)
	byUser := map[string]map[credential][]*Hold{}
	s.holds.mu.Lock()
	for u, set := range s.holds.byUser {
		if userID != "" && u != userID {
			continue
		}
		creds := map[credential][]*Hold{}
		for h := range set {
			creds[h.cred] = append(creds[h.cred], h)
		}
		byUser[u] = creds
	}
	s.holds.mu.Unlock()
	for u, creds := range byUser {
		s.recheckUser(ctx, u, creds)
	}
}

func (s *Service) recheckUser(ctx context.Context, userID string, held map[credential][]*Hold) {
	ctx, cancel := context.WithTimeout(ctx, holdCheckTimeout)
	defer cancel()
	creds := make(map[credential]bool, len(held))
	for c := range held {
		creds[c] = true
	}
	valid, err := s.validCredentials(ctx, userID, creds)
	if err != nil {
		// Unsure is not valid: the clients reconnect and authenticate again.
		s.log.WarnContext(ctx, "auth: re-check held connections' credentials", "user_id", userID, "err", err)
	}
	for c, hs := range held {
		if _, ok := valid[c]; ok {
			continue
		}
		for _, h := range hs {
			h.end()
		}
	}
}
