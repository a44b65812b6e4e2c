package api

// The OpenAPI document is exact enough to generate a client that needs no
// casts (DESIGN §4 Operations). Two mechanisms make it so:
//
//   - documentOperation, called by Register for every operation, derives
//     what the operation can answer from its auth rule, parameters and
//     body: security (`[]` when public), the rule in words, and each 4xx
//     with the error schema; the tables below add what cannot be derived
//     (several success answers, a 409).
//   - finishDocument, run once every route is in, gives pass-through JSON
//     fields their known shapes and closes the objects only responses use
//     (requests stay open: unknown fields are ignored).

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/auth"
)

// answer is one success answer of an operation that picks its status at
// run time (huma documents only the default one).
type answer struct {
	desc string
	// body is the type of the JSON body; nil and like 0: no body.
	body reflect.Type
	// like reuses the body huma documented for that status.
	like    int
	headers []string
}

// successAnswers are, for the operations listed, every success answer:
// they replace what huma derived.
var successAnswers = map[string]map[int]answer{
	"register": {
		http.StatusCreated:  {desc: "With `Accept: application/json`: the new account.", body: reflect.TypeFor[User]()},
		http.StatusSeeOther: {desc: "For browsers: redirect to /login.", headers: []string{"Location"}},
	},
	"login": {
		http.StatusOK: {desc: "With `Accept: application/json`: the session token, also set as the cookie.",
			body: reflect.TypeFor[LoginResult](), headers: []string{"Set-Cookie"}},
		http.StatusSeeOther: {desc: "For browsers: redirect to /, with the session cookie.", headers: []string{"Location", "Set-Cookie"}},
	},
	"logout": {
		http.StatusNoContent: {desc: "With `Accept: application/json`: the session is deleted and the cookie cleared.", headers: []string{"Set-Cookie"}},
		http.StatusSeeOther:  {desc: "For browsers: the session is deleted, the cookie cleared, and a redirect to /login.", headers: []string{"Location", "Set-Cookie"}},
	},
	"authorize-credentials": {
		http.StatusFound: {desc: "To the provider's authorization page, with a single-use state (and a PKCE challenge when enabled).", headers: []string{"Location"}},
	},
	"oauth-callback": {
		http.StatusSeeOther: {desc: "To `return_to` with `?connected=<provider>`, or with `?error=<code>&provider=<provider>` when the provider refused or the code exchange failed.",
			headers: []string{"Location"}},
	},
	"import-manifest": {
		http.StatusCreated: {desc: "A new app, with the counts of what the manifest created.", like: http.StatusCreated},
		http.StatusOK:      {desc: "An existing app of this slug at a lower version, upgraded in place (`upgraded: true`).", like: http.StatusCreated},
	},
}

// extraErrors are the error answers an operation gives beyond those its
// rule, parameters and body imply, with what they mean there.
var extraErrors = map[string]map[int]string{
	"register":               {http.StatusConflict: "Email already registered.", http.StatusForbidden: "Registration is closed (AP_REGISTRATION=closed)."},
	"login":                  {http.StatusUnauthorized: "Wrong email or password, or a disabled account (one text for both)."},
	"update-me":              {http.StatusConflict: "Email already registered.", http.StatusBadRequest: "A new email without `current_password`, or with a wrong one."},
	"change-password":        {http.StatusBadRequest: "Current password is incorrect, or the new one is too short."},
	"update-user":            {http.StatusConflict: "Cannot remove the last active admin."},
	"create-api-key":         {http.StatusNotFound: "`app_id` names no app of yours."},
	"create-app":             {http.StatusConflict: "You already have an app with this slug."},
	"import-manifest":        {http.StatusConflict: "You already have this slug at the same or a higher version."},
	"install-app":            {http.StatusConflict: "You already have an app with this slug: give the copy another one."},
	"create-app-agent":       {http.StatusConflict: "The app already has an agent of this name."},
	"update-app-agent":       {http.StatusConflict: "The app already has an agent of this name."},
	"activate-agent":         {http.StatusConflict: activateConflict},
	"activate-app-agent":     {http.StatusConflict: activateConflict},
	"create-activation":      {http.StatusConflict: activateConflict, http.StatusNotFound: "`agent_id` names no agent you can use."},
	"cancel-activation":      {http.StatusConflict: "The activation has already ended."},
	"answer-waitpoint":       {http.StatusConflict: "The waitpoint has been answered already, or its activation has ended."},
	"create-llm-provider":    {http.StatusConflict: "You already have a provider of this name."},
	"update-llm-provider":    {http.StatusConflict: "You already have a provider of this name."},
	"readyz":                 {http.StatusServiceUnavailable: "Not ready: the database is unreachable or migrations are pending."},
	"list-agent-activations": {http.StatusBadRequest: "A bad filter: `context` is not a JSON object, or an unknown `status`."},
	"create-data-model":      {http.StatusConflict: "The app already has a model with this slug."},
	"create-function":        {http.StatusConflict: "The app already has a function of this name.", http.StatusNotFound: "`app_id` names no app of yours."},
	"update-function":        {http.StatusConflict: "The app already has a function of this name."},
	"create-pipeline":        {http.StatusConflict: "The app already has a pipeline of this name.", http.StatusNotFound: "`app_id` names no app of yours."},
	"update-pipeline":        {http.StatusConflict: "The app already has a pipeline of this name."},
	"list-pipeline-runs":     {http.StatusNotFound: "`pipeline_id` names no pipeline of yours."},
	"get-credentials": credentialErrors(map[int]string{http.StatusUnauthorized: tokenExpired,
		http.StatusForbidden: "InvalidScopeError: the connection lacks a scope of `required_scopes`."}),
	"revoke-credentials":    credentialErrors(nil),
	"credentials-connected": credentialErrors(nil),
	"refresh-credentials": credentialErrors(map[int]string{http.StatusUnauthorized: tokenExpired,
		http.StatusBadGateway: "AuthenticationFailedError: the provider did not refresh the tokens (it is retried in the background)."}),
	"validate-scopes": credentialErrors(nil),
	"token-info":      credentialErrors(nil),
	"user-info": credentialErrors(map[int]string{http.StatusUnauthorized: tokenExpired,
		http.StatusBadGateway: "AuthenticationFailedError: the provider's user info endpoint failed."}),
	"authorize-credentials": credentialErrors(nil),
	"credentials-auth-url":  credentialErrors(nil),
	"oauth-callback": {http.StatusBadRequest: "A missing, unknown, tampered, already used or expired `state`, or no `code`.",
		http.StatusForbidden: "Not completed in a browser logged in (session cookie) as the user who started the flow."},
	"create-authenticator": {http.StatusConflict: "The app already has an authenticator of this name."},
	"add-service-provider": {http.StatusConflict: "The app already has an authenticator of this name."},
	"update-authenticator": {http.StatusConflict: "The app already has an authenticator of this name."},
	"list-authenticators":  {http.StatusNotFound: "`app_id` names no app of yours."},
	"create-mcp-server":    {http.StatusConflict: "The app already has an MCP server of this name."},
	"update-mcp-server":    {http.StatusConflict: "The app already has an MCP server of this name, or agents' tools name the server and the name changes."},
	"delete-mcp-server":    {http.StatusConflict: "Agents' tools name the server (the answer names them): remove it from their tools first."},
	"list-activations":     {http.StatusNotFound: "`app_id` names no app of yours."},
	"list-functions":       {http.StatusNotFound: "`app_id` names no app of yours."},
	"list-pipelines":       {http.StatusNotFound: "`app_id` names no app of yours."},
	"list-credentials":     {http.StatusNotFound: "`app_id` names no app of yours."},
	"get-usage":            {http.StatusNotFound: "`app_id` or `agent_id` names no app or agent of yours, or `user_id` no user (admins, with `X-Admin-Reason`)."},
}

const tokenExpired = "TokenExpiredError: the token expired and could not be refreshed, or the connection was lost (the user must connect again)."

// credentialErrors are the credential service's answers for one provider,
// with more.
func credentialErrors(more map[int]string) map[int]string {
	errs := map[int]string{
		http.StatusBadRequest: "ProviderNotSupportedError: the app has no active authenticator of this name.",
		http.StatusNotFound:   "CredentialNotFoundError: the user has not connected this provider (or the app is not yours: NotFoundError).",
	}
	for status, desc := range more {
		errs[status] = desc
	}
	return errs

}

const activateConflict = "The app or agent is disabled, or the Idempotency-Key was used with a different body or is still being processed."

// limitErrors say what else a 429 means where more than the request rate
// is limited: password hashing, failed logins, open connections.
var limitErrors = map[string]string{
	"register":        hashingBusy,
	"change-password": hashingBusy,
	"login": "Or too many failed logins from this client address (AP_LOGIN_FAILURE_LIMIT a minute; " +
		"then every login from it, right password included, until the minute has passed). " + hashingBusy,
	"stream-activation":  connectionCap,
	"activate-agent":     "With `Accept: text/event-stream`: " + connectionCap + " " + budgetSpent,
	"activate-app-agent": "With `Accept: text/event-stream`: " + connectionCap + " " + budgetSpent,
	"create-activation":  "With `Accept: text/event-stream`: " + connectionCap + " " + budgetSpent,
}

const (
	hashingBusy   = "Or the server is busy checking passwords (a flood of logins or registrations): try again after `Retry-After` seconds."
	connectionCap = "Or the user already holds the maximum of open WebSocket and SSE connections (100 per node)."
	budgetSpent   = "Or `BudgetExceededError`: a budget of the user, the app or the API key is spent for its period (the detail names it; see /api/v1/budgets)."
)

// moreDescriptions say what an operation's summary cannot.
var moreDescriptions = map[string]string{
	"register": "The first account of an empty instance is an admin.",
	"login": "Failed logins are limited per client address (AP_LOGIN_FAILURE_LIMIT a minute); once they are spent, " +
		"every login from that address gets 429 until the minute has passed.",
	"logout":          "Deletes the session of the `ap_session` cookie or of the `st_` Bearer token, if any, and clears the cookie.",
	"change-password": "`{current_password, new_password}`; ends every other session of the account.",
	"import-manifest": "The body is the manifest itself: JSON, or YAML with `Content-Type: application/yaml`. " +
		"Everything it declares is created in one transaction; a bad manifest is 400 naming the first bad path " +
		"(e.g. `agents[1].agent_config.model`). Importing a slug you have at a lower version upgrades that app in place (200); " +
		"the same or a higher version is 409.",
	"export-manifest": "Imports back to the same app. A webhook agent's signing secret is never part of it.",
	"create-app-agent": "A webhook agent (`agent_type_id: custom`, `agent_config: {runtime: webhook, url, secret?}`) signs its requests " +
		"with `agent_config.secret` (`whsec_` and the base64 of 24 to 64 random bytes), or, when that is omitted, with a secret " +
		"the platform generates and shows once in this answer (`webhook_secret`). The secret is stored encrypted and never returned again. " +
		"`agent_config.url` on a literal private address is refused (400) unless AP_EGRESS_ALLOW allows it.",
	"update-app-agent": "`rotate_secret: true` gives a webhook agent a new generated signing secret, shown once in this answer " +
		"(`webhook_secret`); `agent_config.secret` sets one of yours instead. The old secret stops signing at once.",
	"install-app": "Each webhook-runtime agent of the copy gets a signing secret of its own, shown once in `webhook_secrets`; " +
		"the publisher's secrets and agents' `webhook_url` are never copied.",
	"cancel-activation": "A queued or running activation ends `failed` with the error `Activation cancelled`, and its work stops.",
	"stream-activation": "When the credential that opened the stream ends (logout, revoked or expired key, password change, " +
		"disabled account) the stream ends within a second. A user may hold 100 WebSocket and SSE connections at once (per node); " +
		"beyond that the request answers 429.",
	"create-authenticator": authenticatorRules,
	"add-service-provider": authenticatorRules,
	"delete-authenticator": "The authenticator's connections are revoked first.",
	"update-authenticator": "Any subset of the fields, `is_active`, and a new `client_secret` (a manifest's authenticator gets its first one so). " +
		"The result is validated whole, as a create is.",
	"create-mcp-server": mcpServerRules,
	"update-mcp-server": "Any subset of the fields; the result is validated whole, as a create is.",
	"worker-status": "Queue depth by state and the throughput of the last minute and hour; admins also see the worker " +
		"processes (`workers`, with host, pid and heartbeat), which is absent for everyone else.",
	"worker-jobs": "Ids, kinds, states, attempts, errors and times of the queue's jobs; never an activation's input or output.",
}

const authenticatorRules = "`client_id` and `client_secret` are required; the secret is stored encrypted and never returned " +
	"(`has_client_secret`). A known type fills in its provider's endpoints; `custom` needs `authorize_url` and `token_url`. " +
	"Checked: 1 to 50 scopes without whitespace, the client id's format per type, the `configuration` keys' types, " +
	"`authorize_url` HTTPS in production, `redirect_uri` the OAuth callback on AP_PUBLIC_URL (its default), and the URLs the " +
	"platform calls (token, refresh, revoke, `configuration.userinfo_url`) not on a literal private address unless AP_EGRESS_ALLOW allows it. " +
	"Each failure is a 400 naming the field."

const mcpServerRules = "`name` matches `^[a-zA-Z0-9_-]{1,64}$` and is unique in the app; `url` is the server's Streamable HTTP " +
	"endpoint (http or https), not on a literal private address unless AP_EGRESS_ALLOW allows it (names are checked when dialled); " +
	"`authenticator`, when set, names an authenticator of the app: the user's connected account's access token is sent as Bearer. " +
	"Each failure is a 400 naming the field."

// responseHeaders document the headers success answers name.
var responseHeaders = map[string]*huma.Header{
	"Location": {Description: "Where the browser goes next.", Schema: &huma.Schema{Type: huma.TypeString}},
	"Set-Cookie": {Description: "The `ap_session` cookie (HttpOnly, SameSite=Lax, Path=/, Secure in production); cleared by logout.",
		Schema: &huma.Schema{Type: huma.TypeString}},
}

// headersNotParameters are request headers huma lists as parameters that
// carry no value of the operation's own (OpenAPI ignores the first three).
var headersNotParameters = []string{"Accept", "Content-Type", "Authorization", "Cookie"}

// operationOf finds a registered operation in the document.
func operationOf(oapi *huma.OpenAPI, method, path string) *huma.Operation {
	item := oapi.Paths[path]
	if item == nil {
		return nil
	}
	return map[string]*huma.Operation{
		http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
		http.MethodPatch: item.Patch, http.MethodDelete: item.Delete, http.MethodHead: item.Head,
	}[method]
}

// documentOperation completes an operation's entry from its rule (in
// op.Metadata), parameters and body. Responses already written by hand are
// kept.
func documentOperation(oapi *huma.OpenAPI, op *huma.Operation) {
	rule, _ := op.Metadata[ruleKey].(auth.Rule)
	if rule.Public {
		// Explicitly none, so a generator does not apply a global default.
		op.Security = []map[string][]string{}
	}
	op.Description = paragraphs(op.Description, moreDescriptions[op.OperationID], ruleText(rule, op.Method))
	if answers, ok := successAnswers[op.OperationID]; ok {
		documentAnswers(oapi, op, answers)
	}
	delete(op.Responses, "default")
	errSchema := oapi.Components.Schemas.Schema(reflect.TypeFor[ErrorBody](), true, "")
	for status, desc := range errorAnswers(op, rule) {
		key := strconv.Itoa(status)
		if op.Responses[key] != nil {
			continue
		}
		r := &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errSchema}}}
		op.Responses[key] = r
	}
	if r := op.Responses[strconv.Itoa(http.StatusTooManyRequests)]; r != nil && r.Headers["Retry-After"] == nil {
		// Every 429 carries it (errors.go), hand-documented ones too.
		if r.Headers == nil {
			r.Headers = map[string]*huma.Header{}
		}
		r.Headers["Retry-After"] = &huma.Header{Description: "Seconds to wait: 60.", Schema: &huma.Schema{Type: huma.TypeInteger}}
	}
}

// documentAnswers replaces the success answers huma derived.
func documentAnswers(oapi *huma.OpenAPI, op *huma.Operation, answers map[int]answer) {
	derived := map[string]*huma.Response{}
	for key, r := range op.Responses {
		if status, err := strconv.Atoi(key); err == nil && status < 400 {
			derived[key] = r
			delete(op.Responses, key)
		}
	}
	for status, a := range answers {
		r := &huma.Response{Description: a.desc}
		switch {
		case a.like != 0:
			src := derived[strconv.Itoa(a.like)]
			if src == nil {
				panic(fmt.Sprintf("api: %s: no derived %d answer to reuse", op.OperationID, a.like))
			}
			r.Content, r.Headers = src.Content, src.Headers
		case a.body != nil:
			r.Content = map[string]*huma.MediaType{"application/json": {Schema: oapi.Components.Schemas.Schema(a.body, true, "")}}
		}
		for _, h := range a.headers {
			if r.Headers == nil {
				r.Headers = map[string]*huma.Header{}
			}
			r.Headers[h] = responseHeaders[h]
		}
		op.Responses[strconv.Itoa(status)] = r
	}
}

// errorAnswers are the error statuses op can answer, with their meaning.
func errorAnswers(op *huma.Operation, rule auth.Rule) map[int]string {
	errs := map[int]string{http.StatusInternalServerError: "Internal error: the `X-Request-ID` header identifies it in the server's log."}
	add := func(status int, desc string) {
		if prev, ok := errs[status]; ok {
			desc = prev + " " + desc
		}
		errs[status] = desc
	}
	var invalid, absent bool
	for _, p := range op.Parameters {
		switch p.In {
		case "path":
			absent = true
			invalid = invalid || (p.Schema != nil && p.Schema.Type != huma.TypeString)
		case "query":
			invalid = true
		case "header":
			invalid = invalid || !slices.Contains(headersNotParameters, http.CanonicalHeaderKey(p.Name))
		}
	}
	if op.RequestBody != nil {
		invalid = true
		add(http.StatusRequestEntityTooLarge, "The request body is over 1 MiB.")
	}
	if invalid {
		add(http.StatusBadRequest, "Invalid input: the detail names the field.")
	}
	if absent {
		add(http.StatusNotFound, "Not found, or not yours (another user's resource answers as if absent).")
	}
	if !rule.Public {
		add(http.StatusUnauthorized, "No credentials, or an invalid, expired or revoked one.")
		add(http.StatusForbidden, "The credential may not do this (see Authentication above).")
	}
	if op.Method != http.MethodGet && op.Method != http.MethodHead {
		add(http.StatusForbidden, "A cookie-authenticated request from another origin is refused.")
	}
	if op.Metadata[unlimitedKey] != true {
		add(http.StatusTooManyRequests, "Rate limit exceeded: wait `Retry-After` seconds.")
	}
	if desc, ok := limitErrors[op.OperationID]; ok {
		add(http.StatusTooManyRequests, desc)
	}
	for status, desc := range extraErrors[op.OperationID] {
		add(status, desc)
	}
	if !slices.ContainsFunc(keys(errs), func(s int) bool { return s >= 400 && s < 500 }) {
		// Every route refuses an oversized body, even one that reads none.
		add(http.StatusRequestEntityTooLarge, "The request body is over 1 MiB.")
	}
	// Every route, before anything else runs (limitHeaders).
	add(http.StatusRequestHeaderFieldsTooLarge, "The request line and headers are over 64 KiB.")
	return errs
}

// paragraphs joins the non-empty texts as Markdown paragraphs.
func paragraphs(texts ...string) string {
	return strings.Join(slices.DeleteFunc(texts, func(t string) bool { return strings.TrimSpace(t) == "" }), "\n\n")
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ruleText says in words what a rule asks of the caller.
func ruleText(rule auth.Rule, method string) string {
	bound := " A key bound to an app reaches only that app and what is in it; everything else answers as if absent, or 403."
	switch {
	case rule.Public:
		return "**Authentication:** none."
	case rule.SessionOnly:
		return "**Authentication:** a session only: the `ap_session` cookie, or the `st_` session token from login as `Authorization: Bearer`. API keys get 403."
	case rule.Admin:
		return "**Authentication:** an admin: an admin's session, or an API key with the `admin` scope of an admin user. Anyone else gets 403."
	}
	scopes := []string{"`write:all`", "`admin`"}
	if method == http.MethodGet || method == http.MethodHead {
		scopes = append([]string{"`read:all`"}, scopes...)
	}
	if rule.AppAccess {
		scopes = append(scopes, "`app:access`")
	}
	other := " Keys with other scopes get 403."
	if len(scopes) == len(auth.Scopes) {
		other = ""
	}
	if rule.Account {
		bound = " It acts on the account, not inside one app: a key bound to an app gets 403."
	}
	agentKeys := " Agent keys (`agk_`) get 403."
	if rule.AgentKeyOK {
		agentKeys = " An agent key (`agk_`) may use it too while its activation runs, for its activation's app only."
	}
	return "**Authentication:** a session, or an API key with one of the scopes " + strings.Join(scopes, ", ") + "." + other + bound + agentKeys
}

// finishDocument runs once every operation is registered.
func finishDocument(oapi *huma.OpenAPI) error {
	for id := range successAnswers {
		if findOperation(oapi, id) == nil {
			return fmt.Errorf("api: successAnswers names no operation %q", id)
		}
	}
	for id := range extraErrors {
		if findOperation(oapi, id) == nil {
			return fmt.Errorf("api: extraErrors names no operation %q", id)
		}
	}
	for id := range limitErrors {
		if findOperation(oapi, id) == nil {
			return fmt.Errorf("api: limitErrors names no operation %q", id)
		}
	}
	for id := range moreDescriptions {
		if findOperation(oapi, id) == nil {
			return fmt.Errorf("api: moreDescriptions names no operation %q", id)
		}
	}
	registry := oapi.Components.Schemas
	documentWebhooks(oapi)
	applyKnownShapes(registry)

	inRequest, inResponse := map[*huma.Schema]bool{}, map[*huma.Schema]bool{}
	reachFromPaths(oapi, inRequest, inResponse)
	forEachWebhook(oapi, func(op *huma.Operation) {
		// The platform writes these bodies: they are closed as answers are.
		for _, mt := range op.RequestBody.Content {
			reach(registry, mt.Schema, inResponse)
		}
	})
	all := map[*huma.Schema]bool{}
	for _, s := range registry.Map() {
		reach(registry, s, all)
	}
	for s := range inRequest {
		all[s] = true
	}
	for s := range inResponse {
		all[s] = true
	}
	for s := range all {
		for _, p := range s.Properties {
			if p.Ref != "" {
				// A $ref stands alone: OpenAPI 3.0 (the downgraded
				// document) ignores its siblings, and linters refuse them.
				// Its target describes itself.
				p.Description = ""
			}
		}
		open, isBool := s.AdditionalProperties.(bool)
		switch {
		case len(s.Properties) > 0 && isBool && open && inResponse[s] && !inRequest[s]:
			// Only the server writes it: exactly these fields.
			s.AdditionalProperties = false
		case len(s.Properties) > 0 && isBool && open:
			// A request's object: unknown fields are ignored, which is
			// JSON Schema's default, so nothing needs saying (and generated
			// request types stay plain structs).
			s.AdditionalProperties = nil
		case isEmptySchema(s.AdditionalProperties):
			// A free-form object: say "any value" plainly.
			s.AdditionalProperties = true
		}
	}
	formatNumbersAndIds(registry, all)
	forEachOperation(oapi, documentForGenerators)
	inlineWebhookBodies(oapi)
	return mergeAuthenticatorPaths(oapi)
}

// notUUIDIds are the id-named fields and parameters whose values are not
// UUIDs (keyed by name, or by "Schema.name"); every other id is
// `format: uuid` (DESIGN §4 Operations).
var notUUIDIds = map[string]bool{
	"chat_id": true, "session_id": true, // chosen by the caller
	"client_id":        true, // the OAuth client id a provider issued
	"provider_user_id": true, // the user's id at the OAuth provider
	"provider_id":      true, // an LLM provider: system providers' ids are names (echo, openai, anthropic)
	"webhook_id":       true, // msg_<uuid>, the Standard Webhooks message id
	"resource_id":      true, // any audited resource, an LLM provider (a name) included
	"tool_call_id":     true, // the model's own (OpenAI's call_…, Anthropic's toolu_…)
	"scope_id":         true, // a budget's: a user's or an app's uuid, or an API key's number
	"LLMProvider.id":   true, // system providers' ids are names
	"Step.id":          true, // a name the pipeline's author chose
	"StepState.id":     true,
}

// isIDName says whether a field or parameter name names an id.
func isIDName(name string) bool {
	return name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "Id")
}

// formatNumbersAndIds says `format: double` on every JSON number and
// `format: uuid` on every id field of the schemas (which huma then checks
// on requests too: a malformed id in a body is a 400 naming the field).
func formatNumbersAndIds(registry huma.Registry, all map[*huma.Schema]bool) {
	names := map[*huma.Schema]string{}
	for name, s := range registry.Map() {
		names[s] = name
	}
	for s := range all {
		if s.Type == huma.TypeNumber && s.Format == "" {
			s.Format = "double"
		}
		for name, p := range s.Properties {
			if !isIDName(name) || p.Type != huma.TypeString || p.Format != "" || len(p.Enum) > 0 ||
				notUUIDIds[name] || notUUIDIds[names[s]+"."+name] {
				continue
			}
			p.Format = "uuid"
		}
	}
}

// documentForGenerators finishes one operation for client generators:
// id parameters are uuids, the record lists' filter[field] is a parameter,
// and no body type is advertised that the operation refuses.
func documentForGenerators(op *huma.Operation) {
	for _, p := range op.Parameters {
		if (p.In != "path" && p.In != "query") || !isIDName(p.Name) || p.Schema == nil ||
			p.Schema.Type != huma.TypeString || p.Schema.Format != "" || notUUIDIds[p.Name] ||
			strings.HasPrefix(op.Path, "/api/v1/llm-providers/") {
			continue
		}
		// A copy: the document says uuid, while the request still
		// answers a malformed id as absent (404), as any unknown one.
		doc := *p.Schema
		doc.Format = "uuid"
		p.Schema = &doc
	}
	if op.OperationID == "list-records" || op.OperationID == "explorer-records" {
		// Read from the raw query (RecordQuery.Resolve): huma cannot see it.
		op.Parameters = append(op.Parameters, &huma.Param{
			Name: "filter", In: "query", Style: "deepObject", Explode: ptrTo(true),
			Description: "filter[field]=value: records whose field equals value, compared as the field's type " +
				"(any of the model's fields but json ones); several filters all hold.",
			Schema: &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{Type: huma.TypeString}},
		})
	}
	if op.RequestBody != nil && op.RequestBody.Content["application/json"] != nil {
		// huma adds octet-stream for a RawBody []byte; those handlers
		// parse JSON and answer anything else 415.
		delete(op.RequestBody.Content, "application/octet-stream")
	}
}

func ptrTo[T any](v T) *T { return &v }

// The spec's two authenticator routes, POST /oauth/authenticators/{app_id}
// and GET|PATCH|DELETE /oauth/authenticators/{authenticator_id}, are one
// path to OpenAPI (two templates differing only in the parameter's name
// are the same path): the document merges them under {id}, each operation
// saying which id it takes. The routes themselves keep their patterns.
var authenticatorPaths = map[string]string{
	"/api/v1/oauth/authenticators/{app_id}":           "app",
	"/api/v1/oauth/authenticators/{authenticator_id}": "authenticator",
}

const authenticatorPath = "/api/v1/oauth/authenticators/{id}"

func mergeAuthenticatorPaths(oapi *huma.OpenAPI) error {
	merged := &huma.PathItem{}
	for path, what := range authenticatorPaths {
		item := oapi.Paths[path]
		if item == nil {
			return fmt.Errorf("api: no path %s to merge", path)
		}
		delete(oapi.Paths, path)
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Patch, item.Delete, item.Put} {
			if op == nil {
				continue
			}
			for _, p := range op.Parameters {
				if p.In == "path" {
					p.Name = "id"
					p.Description = "The " + what + "'s id."
				}
			}
			op.Path = authenticatorPath
			op.Description = paragraphs("`id` is the "+what+"'s id.", op.Description)
		}
		for dst, src := range map[**huma.Operation]*huma.Operation{&merged.Get: item.Get, &merged.Post: item.Post,
			&merged.Patch: item.Patch, &merged.Delete: item.Delete, &merged.Put: item.Put} {
			if src != nil {
				if *dst != nil {
					return fmt.Errorf("api: %s %s is in both authenticator paths", src.Method, authenticatorPath)
				}
				*dst = src
			}
		}
	}
	oapi.Paths[authenticatorPath] = merged
	return nil
}

func isEmptySchema(v any) bool {
	s, ok := v.(*huma.Schema)
	return ok && s.Type == "" && s.Ref == "" && len(s.Properties) == 0 && s.Items == nil &&
		s.AnyOf == nil && s.OneOf == nil && s.AllOf == nil && len(s.Enum) == 0
}

// reach adds s and every schema it leads to (through $ref too) to seen.
// reachFromPaths marks in inRequest what the paths' parameters and request
// bodies reach, and in inResponse what their answers reach.
func reachFromPaths(oapi *huma.OpenAPI, inRequest, inResponse map[*huma.Schema]bool) {
	registry := oapi.Components.Schemas
	forEachOperation(oapi, func(op *huma.Operation) {
		for _, p := range op.Parameters {
			reach(registry, p.Schema, inRequest)
		}
		if op.RequestBody != nil {
			for _, mt := range op.RequestBody.Content {
				reach(registry, mt.Schema, inRequest)
			}
		}
		for _, r := range op.Responses {
			for _, mt := range r.Content {
				reach(registry, mt.Schema, inResponse)
			}
		}
	})
}

func reach(registry huma.Registry, s *huma.Schema, seen map[*huma.Schema]bool) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		s = registry.SchemaFromRef(s.Ref)
		if s == nil {
			return
		}
	}
	if seen[s] {
		return
	}
	seen[s] = true
	for _, p := range s.Properties {
		reach(registry, p, seen)
	}
	reach(registry, s.Items, seen)
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
		reach(registry, ap, seen)
	}
	for _, group := range [][]*huma.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, sub := range group {
			reach(registry, sub, seen)
		}
	}
}

func forEachOperation(oapi *huma.OpenAPI, fn func(*huma.Operation)) {
	for _, item := range oapi.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Delete, item.Options, item.Head, item.Patch, item.Trace} {
			if op != nil {
				fn(op)
			}
		}
	}
}

func findOperation(oapi *huma.OpenAPI, id string) *huma.Operation {
	var found *huma.Operation
	forEachOperation(oapi, func(op *huma.Operation) {
		if op.OperationID == id {
			found = op
		}
	})
	return found
}
