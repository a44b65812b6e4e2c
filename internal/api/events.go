package api

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
)

// eventsSocket is GET /api/v1/ws: a plain net/http route, since a
// WebSocket is not a request/response operation huma can describe.
func (a *API) eventsSocket(w http.ResponseWriter, r *http.Request) {
	// The router resolved the credential (?token= included, see
	// queryTokenRoutes) and spent the handshake's rate.
	id := auth.IdentityFrom(r.Context())
	caller, err := auth.Check(id, auth.AppUse, http.MethodGet)
	if err != nil {
		writeError(w, r, err)
		return
	}
	byCookie := id.Source == auth.FromCookie
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(w, r, apperr.New(apperr.Validation, "Expected a WebSocket upgrade request"))
		return
	}
	q := r.URL.Query()
	req := events.WSRequest{
		UserID: caller.UserID,
		Filter: events.Filter{AppID: q.Get("app_id"), ChatID: q.Get("chat_id"), ActivationID: q.Get("activation_id")},
		Since:  -1,
		AppID:  caller.AppID,
		// A cookie rides along with any page's request: only the platform's
		// own origin may use it. A token in the request was put there on
		// purpose, from wherever.
		Accept: &websocket.AcceptOptions{InsecureSkipVerify: !byCookie, OriginPatterns: a.socketOrigins()},
	}
	if s := q.Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeError(w, r, apperr.Invalid("since", "Invalid value for field since: expected a non-negative integer"))
			return
		}
		req.Since = n
	}
	// An app filter names one of the caller's apps, as the lists' do, and
	// an activation filter one of their activations; so do a subscribe
	// message's.
	checkFilter := func(ctx context.Context, f events.Filter) error {
		if _, err := a.Apps.ListApp(ctx, caller, f.AppID); err != nil {
			return err
		}
		if f.ActivationID == "" {
			return nil
		}
		_, err := a.Activations.Get(ctx, caller, f.ActivationID)
		return err
	}
	if err := checkFilter(r.Context(), req.Filter); err != nil {
		writeError(w, r, err)
		return
	}
	req.CheckFilter = func(ctx context.Context, f events.Filter) *events.Refusal {
		if err := checkFilter(ctx, f); err != nil {
			b := errorBody(ctx, err)
			return &events.Refusal{Detail: b.Detail, StatusCode: b.StatusCode, ErrorType: b.ErrorType}
		}
		return nil
	}
	hold, err := a.Auth.Hold(r.Context(), caller)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer hold.Release()
	req.Ended = hold.Ended()
	defer a.metrics.ConnectionOpened("websocket")()
	a.Events.ServeWS(w, r, req, a.WebSocket)
}

// socketOrigins are the origins besides the request's own host that may
// open a cookie-authenticated socket: the public URL's (behind a proxy the
// Host header may differ).
func (a *API) socketOrigins() []string {
	if u, err := url.Parse(a.Config.PublicURL); err == nil && u.Host != "" {
		return []string{u.Host}
	}
	return nil
}

// documentEventsSocket adds GET /api/v1/ws to the OpenAPI document by hand.
func (a *API) documentEventsSocket() {
	oapi := a.huma.OpenAPI()
	query := func(name, desc string, schema *huma.Schema) *huma.Param {
		return &huma.Param{Name: name, In: "query", Description: desc, Schema: schema}
	}
	str := &huma.Schema{Type: huma.TypeString}
	eventSchema := webSocketMessage(oapi.Components.Schemas)
	errSchema := oapi.Components.Schemas.Schema(reflect.TypeOf(ErrorBody{}), true, "ErrorBody")
	errResp := func(desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errSchema}}}
	}
	op := &huma.Operation{
		OperationID: "events-websocket",
		Method:      http.MethodGet,
		Path:        "/api/v1/ws",
		Summary:     "Live events (WebSocket)",
		Tags:        []string{"events"},
		Description: "Upgrade to a WebSocket that streams the caller's activation events as JSON text messages " +
			"(`activation_created`, `activation_started`, `activation_completed` with `output_data`, `activation_failed` with `error`; " +
			"for agents with tools, `activation_step` with each ended `step` and `activation_waiting` with the run's `waiting`) " +
			"and pipeline run events (`pipeline_run_started`, `pipeline_run_completed` with `output_data`, `pipeline_run_failed` with `error`), " +
			"each with a per-user increasing `seq` (see the WebSocketMessage schema).\n\n" +
			"Authenticate with the `ap_session` cookie (same origin only), `Authorization: Bearer <token>`, or `?token=<token>` " +
			"(for browsers, which cannot set headers on a WebSocket). A key bound to an app sees only that app's events.\n\n" +
			"The client may send `{\"type\": \"subscribe\", \"app_id\"?, \"chat_id\"?, \"activation_id\"?}` to replace the filter; " +
			"the server answers `{\"type\": \"subscribed\", ...the filter}`, or `{\"type\": \"error\", \"error\"}` for a bad message; " +
			"an `app_id` that is not one of the caller's apps is refused with the HTTP API's 404 in the frame " +
			"(`{\"type\": \"error\", \"error\", \"detail\", \"status_code\": 404, \"error_type\": \"NotFoundError\"}`) and the filter in effect stays.\n\n" +
			"`?since=<seq>` first replays the stored events after that seq (kept at least 24 h), then continues live without gap or duplicate. " +
			"The server pings every 30 s. A client that cannot keep up is closed with code 1008 and should reconnect with `since` set " +
			"to the last seq it received; a stopping node closes with 1001. When the credential that opened the socket ends " +
			"(logout, revoked or expired key, password change, disabled account) the socket closes with 4401 within a second.\n\n" +
			"A user may hold 100 WebSocket and SSE connections at once (per node); beyond that the handshake answers 429.",
		Parameters: []*huma.Param{
			query("app_id", "Only events of this app", str),
			query("chat_id", "Only events of this chat (context.chat_id)", str),
			query("activation_id", "Only events of this activation", str),
			query("since", "Replay the stored events after this seq first", &huma.Schema{Type: huma.TypeInteger, Minimum: new(float64)}),
			query("token", "A session token or API key, for clients that cannot send headers", str),
		},
		Security: []map[string][]string{{"bearer": {}}, {"cookie": {}}},
		Responses: map[string]*huma.Response{
			"101": {Description: "Switching protocols; then one WebSocketMessage per text message",
				Content: map[string]*huma.MediaType{"application/json": {Schema: eventSchema}}},
			"400": errResp("A bad query parameter (e.g. since), or not a WebSocket handshake"),
			"401": errResp("No or invalid credentials"),
			"403": errResp("A cross-origin cookie request"),
			"404": errResp("app_id names no app of yours (or one a key bound to another app does not see)"),
			"429": errResp("Rate limit exceeded, or too many open connections of the user"),
		},
		Metadata: map[string]any{ruleKey: auth.AppUse},
	}
	oapi.AddOperation(op)
	documentOperation(oapi, op)
}
