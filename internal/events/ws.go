package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// WSOptions tune WebSocket sessions; zero values take the defaults.
type WSOptions struct {
	// PingInterval keeps idle connections (and proxies) alive and finds dead
	// peers; a pong must arrive within one interval. Default 30 s.
	PingInterval time.Duration
	// Buffer is how many events may wait for a slow client before it is
	// disconnected. Default 256.
	Buffer int
	// WriteTimeout bounds one message write. Default 10 s.
	WriteTimeout time.Duration
}

func (o WSOptions) withDefaults() WSOptions {
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	return o
}

// WSRequest is what an authenticated client asked for.
type WSRequest struct {
	UserID string
	Filter Filter
	// Since replays the stored events after this seq before live ones;
	// negative means no replay.
	Since int64
	// AppID confines the connection to one app (a key bound to it),
	// whatever the client subscribes to.
	AppID string
	// Accept carries the origin policy (nil: same origin only).
	Accept *websocket.AcceptOptions
	// Ended is closed when the credential that opened the connection stops
	// being valid: nothing more is sent, and the connection closes with
	// CloseCredentials. Nil: never.
	Ended <-chan struct{}
	// CheckFilter vets the filter of a subscribe message as the handshake
	// vetted the query's (an app_id that is not the caller's): a refusal
	// is answered as an error frame and the filter in effect stays. Nil:
	// every filter is taken.
	CheckFilter func(ctx context.Context, f Filter) *Refusal
}

// Refusal is why a client message was refused, in the API's error shape
// ({detail, status_code, error_type}), so that a client handles it as it
// would the same refusal over HTTP.
type Refusal struct {
	Detail     string `json:"detail"`
	StatusCode int    `json:"status_code"`
	ErrorType  string `json:"error_type"`
}

// ClientMessage is what a client may send: {"type": "subscribe", app_id?,
// chat_id?, activation_id?} replaces the connection's filter.
type ClientMessage struct {
	Type string `json:"type"`
	Filter
}

// ServerMessage answers a client message: "subscribed" with the filter
// now in effect, or "error" (with the Refusal when CheckFilter refused
// the filter).
type ServerMessage struct {
	Type  string `json:"type"`
	Error string `json:"error,omitempty"`
	*Refusal
	*Filter
}

// Close codes a client sees.
const (
	// CloseSlow: the client fell behind; it should reconnect with ?since.
	CloseSlow = websocket.StatusPolicyViolation
	// CloseShutdown: the node is stopping; reconnect (to another node).
	CloseShutdown = websocket.StatusGoingAway
	// CloseCredentials: the credential that opened the connection ended
	// (logout, revocation, password change, disabled account, expiry).
	CloseCredentials websocket.StatusCode = 4401
)

// errCredentialsEnded stops a session whose Ended channel closed.
var errCredentialsEnded = errors.New("events: credentials ended")

// ServeWS upgrades the request and streams the user's events until the
// client leaves, falls behind, or the bus stops.
func (b *Bus) ServeWS(w http.ResponseWriter, r *http.Request, req WSRequest, opts WSOptions) {
	opts = opts.withDefaults()
	// Subscribe before reading the replay: an event committed meanwhile is
	// then in one or both, never in neither; seq removes the duplicates.
	// Without a replay, the socket starts with what commits after it.
	subscribe := b.Subscribe
	if req.Since < 0 {
		subscribe = b.SubscribeNew
	}
	sub := subscribe(req.UserID, Filter{AppID: req.AppID}, opts.Buffer)
	defer sub.Close()
	conn, err := websocket.Accept(w, r, req.Accept)
	if err != nil {
		return // Accept has answered the request
	}
	s := &wsSession{bus: b, conn: conn, req: req, opts: opts, filter: req.Filter}
	s.run(r.Context(), sub)
}

type wsSession struct {
	bus  *Bus
	conn *websocket.Conn
	req  WSRequest
	opts WSOptions

	mu     sync.Mutex
	filter Filter
}

func (s *wsSession) run(ctx context.Context, sub *Subscription) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.conn.CloseNow()
		wg.Wait()
	}()
	// The reader handles subscribe messages and, by reading, lets pongs and
	// the client's close frame through. Its end (the client left) ends all.
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer cancel()
		s.read(ctx)
	}()
	go func() {
		defer wg.Done()
		defer cancel()
		s.ping(ctx)
	}()

	// Live events up to the resume point are the client's already, even if
	// the replay found nothing after it.
	replayed := max(s.req.Since, 0)
	if s.req.Since >= 0 {
		var sendErr error
		err := s.bus.Replay(ctx, s.req.UserID, s.req.Since, func(ev Event) bool {
			replayed = ev.Seq
			sendErr = s.send(ctx, &ev)
			return sendErr == nil
		})
		if errors.Is(sendErr, errCredentialsEnded) {
			s.closeEnded()
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				s.bus.log.WarnContext(ctx, "events: replay", "user_id", s.req.UserID, "err", err)
				s.conn.Close(websocket.StatusInternalError, "replay failed")
			}
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.req.Ended:
			s.closeEnded()
			return
		case ev, ok := <-sub.C:
			if !ok {
				if sub.Dropped() {
					s.conn.Close(CloseSlow, "too slow: reconnect with ?since=<last seq received>")
				} else {
					s.conn.Close(CloseShutdown, "server stopping")
				}
				return
			}
			if ev.Seq != 0 && ev.Seq <= replayed {
				continue // already sent by the replay
			}
			if err := s.send(ctx, &ev); err != nil {
				if errors.Is(err, errCredentialsEnded) {
					s.closeEnded()
				}
				return
			}
		}
	}
}

func (s *wsSession) closeEnded() {
	s.conn.Close(CloseCredentials, "credentials no longer valid")
}

// send writes ev if it passes the current filter.
func (s *wsSession) send(ctx context.Context, ev *Event) error {
	s.mu.Lock()
	f := s.filter
	s.mu.Unlock()
	if s.req.AppID != "" && ev.ContextString("app_id") != s.req.AppID || !f.Match(ev) {
		return nil
	}
	select {
	case <-s.req.Ended:
		return errCredentialsEnded
	default:
	}
	return s.write(ctx, ev)
}

func (s *wsSession) write(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, data)
}

func (s *wsSession) read(ctx context.Context) {
	for {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			return
		}
		var m ClientMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Type != "subscribe" {
			msg := `send {"type": "subscribe", "app_id"?, "chat_id"?, "activation_id"?}`
			if err != nil {
				msg = "malformed JSON: " + msg
			}
			if s.write(ctx, ServerMessage{Type: "error", Error: msg}) != nil {
				return
			}
			continue
		}
		f := Filter{AppID: m.AppID, ChatID: m.ChatID, ActivationID: m.ActivationID}
		if s.req.CheckFilter != nil {
			if no := s.req.CheckFilter(ctx, f); no != nil {
				if s.write(ctx, ServerMessage{Type: "error", Error: no.Detail, Refusal: no}) != nil {
					return
				}
				continue
			}
		}
		s.mu.Lock()
		s.filter = f
		s.mu.Unlock()
		if s.write(ctx, ServerMessage{Type: "subscribed", Filter: &f}) != nil {
			return
		}
	}
}

func (s *wsSession) ping(ctx context.Context) {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, s.opts.PingInterval)
			err := s.conn.Ping(pctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					s.conn.Close(websocket.StatusGoingAway, fmt.Sprintf("no pong within %s", s.opts.PingInterval))
				}
				return
			}
		}
	}
}
