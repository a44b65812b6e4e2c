package apps

import (
	"encoding/json"
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/inputschema"
	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/tool"
	"github.com/agentplatform/agentplatform/internal/version"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// Manifest is an app as a document: what import-manifest takes and the
// manifest endpoint returns. It never carries an authenticator's secret;
// a webhook agent's secret may come in but never goes out.
type Manifest struct {
	Name               string          `json:"name" doc:"Display name"`
	Slug               string          `json:"slug" doc:"Unique per user: ^[a-z0-9][a-z0-9-]{0,62}$"`
	Version            string          `json:"version" doc:"Semantic version; re-importing a higher one upgrades the app"`
	Description        string          `json:"description" required:"false"`
	MinPlatformVersion string          `json:"minPlatformVersion,omitempty" doc:"Lowest platform version the app runs on"`
	Models             []Model         `json:"models" required:"false"`
	Agents             []AgentSpec     `json:"agents" required:"false"`
	Functions          []FunctionSpec  `json:"functions" required:"false"`
	Pipelines          []PipelineSpec  `json:"pipelines" required:"false"`
	Authenticators     []Authenticator `json:"authenticators" required:"false"`
	MCPServers         []MCPServerSpec `json:"mcp_servers" required:"false" doc:"Remote MCP servers whose tools the app's LLM agents call (tools of type mcp)"`
}

// Model is a data model of the app.
type Model struct {
	Slug   string  `json:"slug"`
	Name   string  `json:"name" required:"false"`
	Fields []Field `json:"fields"`
}

// Field is a field of a data model.
type Field struct {
	Name     string   `json:"name"`
	Type     string   `json:"type" enum:"string,text,integer,number,boolean,datetime,json,enum"`
	Required bool     `json:"required" required:"false"`
	Values   []string `json:"values,omitempty" doc:"The allowed values of an enum"`
}

// AgentSpec is an agent as a manifest (and the agent API) writes it.
type AgentSpec struct {
	Name           string      `json:"name"`
	Description    string      `json:"description" required:"false"`
	AgentTypeID    string      `json:"agent_type_id" enum:"llm,custom"`
	Version        string      `json:"version" required:"false"`
	Capabilities   []string    `json:"capabilities" required:"false"`
	TimeoutSeconds int         `json:"timeout_seconds" required:"false" doc:"1 to 3600, default 300"`
	WebhookURL     string      `json:"webhook_url,omitempty" doc:"Where each finished activation is POSTed"`
	AgentConfig    AgentConfig `json:"agent_config"`
	// InputSchema is a custom agent's; nil when it declares none.
	InputSchema json.RawMessage `json:"input_schema,omitempty" doc:"Custom agents only: a JSON Schema (an object) the activation's input_data must match, also the arguments of the agent as a tool. LLM agents take {prompt, chat_id?} and refuse it."`
}

// AgentConfig is an LLM agent's {model, temperature, system_message,
// provider_id, max_tokens, tools, max_steps, parallel_tool_calls,
// on_step_limit} or a custom agent's {runtime: javascript, code} or
// {runtime: webhook, url, secret}. The tool part is kept as written (no
// defaults filled in), so that it exports as it was imported.
type AgentConfig struct {
	Model         string   `json:"model,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty" minimum:"0" maximum:"2"`
	SystemMessage string   `json:"system_message,omitempty"`
	ProviderID    string   `json:"provider_id,omitempty"`
	MaxTokens     int      `json:"max_tokens,omitempty"`
	// Tools are what an LLM agent's model may call (package tool).
	Tools             []tool.Spec `json:"tools,omitempty" doc:"LLM agents: the tools the model may call; names unique in the agent"`
	MaxSteps          int         `json:"max_steps,omitempty" minimum:"1" maximum:"50" doc:"LLM agents with tools: at most this many LLM calls per run, default 10"`
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty" doc:"LLM agents with tools: run the calls of one answer at once (at most 4), default true"`
	OnStepLimit       string      `json:"on_step_limit,omitempty" enum:"fail,answer" doc:"LLM agents with tools: at max_steps fail the run (default) or ask for an answer without tools"`
	Runtime           string      `json:"runtime,omitempty" enum:"javascript,webhook"`
	Code              string      `json:"code,omitempty"`
	URL               string      `json:"url,omitempty"`
	// Secret signs a webhook agent's requests; write-only, stored sealed.
	Secret string `json:"secret,omitempty" writeOnly:"true" doc:"A webhook agent's signing secret: whsec_ and the base64 of 24 to 64 random bytes (Standard Webhooks). Write-only, stored encrypted, never returned; when omitted the platform generates one and shows it once (webhook_secret)."`
}

// FunctionSpec is a function of the app.
type FunctionSpec struct {
	Name           string          `json:"name"`
	Description    string          `json:"description" required:"false"`
	Code           string          `json:"code"`
	InputSchema    json.RawMessage `json:"input_schema" required:"false" doc:"A JSON Schema object the input must match"`
	TimeoutSeconds int             `json:"timeout_seconds" required:"false" doc:"1 to 3600, default 30"`
}

// PipelineSpec is a pipeline of the app.
type PipelineSpec struct {
	Name        string `json:"name"`
	Description string `json:"description" required:"false"`
	Steps       []Step `json:"steps"`
}

// Step is one step of a pipeline; Ref names an agent or function of the
// manifest (by name), or of the app (by name or id) for a pipeline made
// over the API; Input is a JSON template.
type Step struct {
	ID    string          `json:"id"`
	Type  string          `json:"type" enum:"agent,function"`
	Ref   string          `json:"ref" doc:"The agent's or function's name, or over the API its id, within the pipeline's app"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Authenticator is an OAuth 2.0 provider definition, without secrets.
type Authenticator struct {
	Name              string          `json:"name"`
	AuthenticatorType string          `json:"authenticator_type" enum:"custom,google,slack,microsoft,yahoo"`
	ClientID          string          `json:"client_id,omitempty"`
	Scopes            []string        `json:"scopes"`
	AuthorizeURL      string          `json:"authorize_url,omitempty"`
	TokenURL          string          `json:"token_url,omitempty"`
	RefreshURL        string          `json:"refresh_url,omitempty"`
	RevokeURL         string          `json:"revoke_url,omitempty"`
	RedirectURI       string          `json:"redirect_uri,omitempty"`
	Configuration     json.RawMessage `json:"configuration,omitempty"`
}

// MCPServerSpec is a remote MCP server of the app, as a manifest (and the
// mcp-servers API) writes it.
type MCPServerSpec struct {
	Name          string `json:"name" doc:"Unique in the app, ^[a-zA-Z0-9_-]{1,64}$: what mcp tools name as their server, and the prefix of its tools' names"`
	URL           string `json:"url" doc:"The server's Streamable HTTP endpoint, called through the egress guard; a literal private address is refused"`
	Authenticator string `json:"authenticator,omitempty" doc:"An authenticator of the app: the user's connected account's access token is sent as Bearer"`
}

// The values the manifest accepts.
var (
	slugPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	fieldNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	fieldTypes       = []string{"string", "text", "integer", "number", "boolean", "datetime", "json", "enum"}
	jsonSchemaTypes  = []string{"object", "array", "string", "number", "integer", "boolean", "null"}
)

// Defaults of the manifest.
const (
	DefaultAgentTimeout    = 300
	DefaultFunctionTimeout = 30
	maxTimeout             = 3600
	defaultVersion         = "1.0.0"
)

// ParseManifest reads a manifest: YAML when contentType says so, JSON
// otherwise. Every problem is an apperr validation error naming the first
// bad path.
func ParseManifest(body []byte, contentType string) (*Manifest, error) {
	var v any
	var err error
	if isYAML(contentType) {
		v, err = parseYAML(body)
	} else {
		v, err = decodeJSON(body)
		if err != nil {
			err = apperr.Invalid("body", "Malformed JSON body: "+err.Error())
		}
	}
	if err != nil {
		return nil, err
	}
	return DecodeManifest(v, "")
}

func isYAML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml")
}

func parseYAML(body []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(body, &v); err != nil {
		return nil, apperr.Invalid("body", "Malformed YAML body: "+err.Error())
	}
	v, err := normalize(stringKeys(v))
	if err != nil {
		return nil, apperr.Invalid("body", "Malformed YAML body: "+err.Error())
	}
	return v, nil
}

// stringKeys makes YAML's non-string mapping keys (1:, true:) strings, as
// JSON needs.
func stringKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = stringKeys(e)
		}
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = stringKeys(e)
		}
	}
	return v
}

// DecodeManifest validates an already decoded manifest (JSON types, numbers
// as json.Number or float64); root prefixes the paths of errors, e.g.
// "manifest_data".
func DecodeManifest(v any, root string) (*Manifest, error) {
	v, err := normalize(v)
	if err != nil {
		return nil, apperr.Invalid(orBody(root), "Invalid manifest: "+err.Error())
	}
	d := &decoder{}
	m := decodeManifest(d, d.asObject(v, root, true))
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

func orBody(root string) string {
	if root == "" {
		return "body"
	}
	return root
}

func decodeManifest(d *decoder, o *object) *Manifest {
	m := &Manifest{}
	decodeHeader(d, o, m)

	m.Models = []Model{}
	seen := map[string]bool{}
	for i, item := range o.array("models", false) {
		path := index(o.at("models"), i)
		model := decodeModel(d, d.asObject(item, path, true))
		if seen[model.Slug] {
			d.invalid(path+".slug", "duplicate model slug %q", model.Slug)
		}
		seen[model.Slug] = true
		m.Models = append(m.Models, model)
	}

	m.Agents = []AgentSpec{}
	agents := map[string]bool{}
	for i, item := range o.array("agents", false) {
		path := index(o.at("agents"), i)
		a := decodeAgent(d, d.asObject(item, path, true))
		if agents[a.Name] {
			d.invalid(path+".name", "duplicate agent name %q", a.Name)
		}
		agents[a.Name] = true
		m.Agents = append(m.Agents, a)
	}

	m.Functions = []FunctionSpec{}
	functions := map[string]bool{}
	for i, item := range o.array("functions", false) {
		path := index(o.at("functions"), i)
		f := decodeFunction(d, d.asObject(item, path, true))
		if functions[f.Name] {
			d.invalid(path+".name", "duplicate function name %q", f.Name)
		}
		functions[f.Name] = true
		m.Functions = append(m.Functions, f)
	}

	m.Pipelines = []PipelineSpec{}
	pipelines := map[string]bool{}
	refs := Refs{Known: map[string]map[string]bool{"agent": agents, "function": functions}}
	for i, item := range o.array("pipelines", false) {
		path := index(o.at("pipelines"), i)
		p := decodePipeline(d, d.asObject(item, path, true), refs)
		if pipelines[p.Name] {
			d.invalid(path+".name", "duplicate pipeline name %q", p.Name)
		}
		pipelines[p.Name] = true
		m.Pipelines = append(m.Pipelines, p)
	}

	m.Authenticators = []Authenticator{}
	auths := map[string]bool{}
	for i, item := range o.array("authenticators", false) {
		path := index(o.at("authenticators"), i)
		ao := d.asObject(item, path, true)
		if ao.has("client_secret") {
			d.invalid(ao.at("client_secret"), "a manifest carries no secrets; set the client secret on the authenticator after import")
		}
		a := decodeAuthenticator(d, ao)
		if auths[a.Name] {
			d.invalid(path+".name", "duplicate authenticator name %q", a.Name)
		}
		auths[a.Name] = true
		m.Authenticators = append(m.Authenticators, a)
	}

	m.MCPServers = []MCPServerSpec{}
	servers := map[string]bool{}
	for i, item := range o.array("mcp_servers", false) {
		path := index(o.at("mcp_servers"), i)
		ms := decodeMCPServer(d, d.asObject(item, path, true))
		if servers[ms.Name] {
			d.invalid(path+".name", "duplicate MCP server name %q", ms.Name)
		}
		checkMCPAuthenticator(d, path+".authenticator", ms.Authenticator, auths)
		servers[ms.Name] = true
		m.MCPServers = append(m.MCPServers, ms)
	}

	// A manifest's tools name its own parts, by name (their ids do not
	// exist yet).
	parts := &toolParts{functions: selfNames(functions), agents: selfNames(agents), authenticators: auths, mcpServers: servers}
	for i := range m.Agents {
		checkToolRefs(d, index(o.at("agents"), i)+".agent_config", &m.Agents[i], parts, m.Agents[i].Name)
	}
	return m
}

// selfNames maps each name to itself.
func selfNames(names map[string]bool) map[string]string {
	out := make(map[string]string, len(names))
	for n := range names {
		out[n] = n
	}
	return out
}

// decodeHeader validates the app part of a manifest: name, slug, version,
// description, minPlatformVersion.
func decodeHeader(d *decoder, o *object, m *Manifest) {
	m.Name = o.str("name", true)
	o.maxLen("name", m.Name, maxAppNameLength)
	m.Slug = o.str("slug", true)
	if m.Slug != "" && !slugPattern.MatchString(m.Slug) {
		d.invalid(o.at("slug"), "must match ^[a-z0-9][a-z0-9-]{0,62}$")
	}
	m.Version = o.str("version", true)
	if m.Version != "" && !validSemver(m.Version) {
		d.invalid(o.at("version"), "must be a semantic version such as 1.2.3")
	}
	m.Description = o.str("description", false)
	m.MinPlatformVersion = o.str("minPlatformVersion", false)
	if mpv := m.MinPlatformVersion; mpv != "" {
		switch {
		case !validSemver(mpv):
			d.invalid(o.at("minPlatformVersion"), "must be a semantic version such as 1.2.3")
		case validSemver(version.Version) && compareSemver(mpv, version.Version) > 0:
			// (A development build with a non-semver version runs anything.)
			d.invalid(o.at("minPlatformVersion"), "the app needs platform version %s or later; this platform is %s", mpv, version.Version)
		}
	}
}

func decodeModel(d *decoder, o *object) Model {
	m := Model{Slug: o.str("slug", true), Fields: []Field{}}
	switch {
	case m.Slug == "":
	case !slugPattern.MatchString(m.Slug):
		d.invalid(o.at("slug"), "must match ^[a-z0-9][a-z0-9-]{0,62}$")
	case m.Slug == "models":
		// /api/v1/data/{app_id}/models lists the models themselves.
		d.invalid(o.at("slug"), `"models" is reserved`)
	}
	m.Name = o.str("name", false)
	o.maxLen("name", m.Name, 200)
	if m.Name == "" {
		m.Name = m.Slug
	}
	names := map[string]bool{}
	for i, item := range o.array("fields", false) {
		path := index(o.at("fields"), i)
		fo := d.asObject(item, path, true)
		f := Field{Name: fo.str("name", true), Type: fo.oneOf("type", fieldTypes...), Required: fo.boolean("required")}
		switch {
		case f.Name == "":
		case !fieldNamePattern.MatchString(f.Name):
			d.invalid(fo.at("name"), "must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$")
		case names[f.Name]:
			d.invalid(fo.at("name"), "duplicate field name %q", f.Name)
		}
		names[f.Name] = true
		if f.Type == "enum" {
			f.Values = fo.stringList("values")
			if len(f.Values) == 0 {
				d.missing(fo.at("values"))
			}
		} else if fo.has("values") && fo.get("values") != nil {
			d.invalid(fo.at("values"), "only an enum field has values")
		}
		m.Fields = append(m.Fields, f)
	}
	return m
}

// decodeAgent validates an agent: a manifest's or an agent API body.
func decodeAgent(d *decoder, o *object) AgentSpec {
	a := AgentSpec{Name: o.str("name", true)}
	o.maxLen("name", a.Name, maxAgentNameChars)
	a.Description = o.str("description", false)
	a.AgentTypeID = o.oneOf("agent_type_id", "llm", "custom")
	a.Version = o.str("version", false)
	o.maxLen("version", a.Version, 50)
	if a.Version == "" {
		a.Version = defaultVersion
	}
	a.Capabilities = o.stringList("capabilities")
	a.TimeoutSeconds = o.integer("timeout_seconds", DefaultAgentTimeout, 1, maxTimeout)
	a.WebhookURL = o.httpURL("webhook_url", false)
	c := o.obj("agent_config", true)
	if o.get("input_schema") != nil {
		if a.AgentTypeID == "llm" {
			d.invalid(o.at("input_schema"), "an LLM agent's input is {prompt, chat_id?}: only a custom agent declares an input_schema")
		} else {
			a.InputSchema = decodeInputSchema(d, o)
		}
	}
	switch a.AgentTypeID {
	case "llm":
		a.AgentConfig = AgentConfig{Model: c.str("model", true), Temperature: c.num("temperature"),
			SystemMessage: c.str("system_message", false), ProviderID: c.str("provider_id", false)}
		if t := a.AgentConfig.Temperature; t != nil && (*t < 0 || *t > 2) {
			d.invalid(c.at("temperature"), "must be between 0 and 2")
		}
		if c.get("max_tokens") != nil {
			a.AgentConfig.MaxTokens = c.integer("max_tokens", 0, 1, 1<<30)
		}
		decodeTools(d, c, &a.AgentConfig)
	case "custom":
		if c.get("tools") != nil {
			d.invalid(c.at("tools"), "only an LLM agent calls tools")
		}
		switch a.AgentConfig.Runtime = c.oneOf("runtime", "javascript", "webhook"); a.AgentConfig.Runtime {
		case "javascript":
			a.AgentConfig.Code = c.str("code", true)
		case "webhook":
			a.AgentConfig.URL = c.httpURL("url", true)
			a.AgentConfig.Secret = c.str("secret", false)
			if a.AgentConfig.Secret != "" {
				if err := webhook.CheckSecret(a.AgentConfig.Secret); err != nil {
					d.invalid(c.at("secret"), "%s", err.Error())
				}
			}
		}
	}
	return a
}

func decodeFunction(d *decoder, o *object) FunctionSpec {
	f := FunctionSpec{Name: o.str("name", true)}
	o.maxLen("name", f.Name, 100)
	f.Description = o.str("description", false)
	f.Code = o.str("code", true)
	f.InputSchema = json.RawMessage(`{"type":"object"}`)
	if o.get("input_schema") != nil {
		f.InputSchema = decodeInputSchema(d, o)
	}
	f.TimeoutSeconds = o.integer("timeout_seconds", DefaultFunctionTimeout, 1, maxTimeout)
	return f
}

// decodeInputSchema validates o's input_schema (a function's, a custom
// agent's): an object, free of plain mistakes, within the bounds of
// inputschema (size, depth, expansion) and compiling.
func decodeInputSchema(d *decoder, o *object) json.RawMessage {
	checkSchema(d, o.obj("input_schema", false))
	raw := o.rawJSON("input_schema")
	if err := inputschema.Check(raw); d.err == nil && err != nil {
		d.invalid(o.at("input_schema"), "%s", err.Error())
	}
	return raw
}

// checkSchema catches the plain mistakes of a JSON Schema (a wrong type
// name, properties that are not an object); the function runner compiles
// it fully.
func checkSchema(d *decoder, s *object) {
	if s == nil {
		return
	}
	switch t := s.get("type").(type) {
	case nil:
	case string:
		if !slices.Contains(jsonSchemaTypes, t) {
			d.invalid(s.at("type"), "must be one of %s", strings.Join(jsonSchemaTypes, ", "))
		}
	case []any:
		for i, e := range t {
			if name, ok := e.(string); !ok || !slices.Contains(jsonSchemaTypes, name) {
				d.invalid(index(s.at("type"), i), "must be one of %s", strings.Join(jsonSchemaTypes, ", "))
			}
		}
	default:
		d.invalid(s.at("type"), "expected a string or an array of strings")
	}
	if props := s.obj("properties", false); props != nil {
		for name, p := range props.m {
			checkSchema(d, d.asObject(p, join(props.path, name), true))
		}
	}
	s.stringList("required")
}

// Refs are what a pipeline's steps may name, by type ("agent",
// "function"). A manifest's steps name its own parts by name (their ids do
// not exist yet); a pipeline made over the API names its app's parts by
// name or id (InApp), and its errors speak of the app, not of a manifest.
type Refs struct {
	Known map[string]map[string]bool
	InApp bool
}

// unknown is the error text of a ref that names no part of its type.
func (r Refs) unknown(typ, ref string) string {
	if r.InApp {
		return fmt.Sprintf("no %s of the app has the name or id %q", typ, ref)
	}
	return fmt.Sprintf("no %s named %q in this manifest", typ, ref)
}

func decodePipeline(d *decoder, o *object, refs Refs) PipelineSpec {
	p := PipelineSpec{Name: o.str("name", true), Steps: []Step{}}
	o.maxLen("name", p.Name, 100)
	p.Description = o.str("description", false)
	steps := o.array("steps", true)
	if o != nil && steps != nil && len(steps) == 0 {
		d.invalid(o.at("steps"), "a pipeline needs at least one step")
	}
	ids := map[string]bool{}
	for i, item := range steps {
		path := index(o.at("steps"), i)
		so := d.asObject(item, path, true)
		s := Step{ID: so.str("id", true), Type: so.oneOf("type", "agent", "function"), Ref: so.str("ref", true), Input: so.rawJSON("input")}
		if s.ID != "" && ids[s.ID] {
			d.invalid(so.at("id"), "duplicate step id %q", s.ID)
		}
		if s.Ref != "" && refs.Known[s.Type] != nil && !refs.Known[s.Type][s.Ref] {
			d.invalid(so.at("ref"), "%s", refs.unknown(s.Type, s.Ref))
		}
		// Checked here, not only by the pipelines API, so that a manifest
		// cannot install a pipeline whose runs all fail at that step.
		if err := CheckReferences(s.Input, ids); err != nil {
			d.invalid(so.at("input"), "%s", err.Error())
		}
		ids[s.ID] = true
		p.Steps = append(p.Steps, s)
	}
	return p
}

// decodeAuthenticator validates an authenticator's fields: a manifest's,
// or an authenticators API body's (whose secret and is_active the
// authenticator domain reads itself). The rules that depend on the
// instance are Service.PrepareAuthenticator's.
func decodeAuthenticator(d *decoder, o *object) Authenticator {
	a := Authenticator{Name: o.str("name", true)}
	o.maxLen("name", a.Name, 100)
	a.AuthenticatorType = o.oneOf("authenticator_type", oauth.Types()...)
	preset := oauth.Presets[a.AuthenticatorType]
	a.ClientID = o.str("client_id", false)
	if preset != nil && a.ClientID != "" {
		if problem := preset.CheckClientID(a.ClientID); problem != "" {
			d.invalid(o.at("client_id"), "%s", problem)
		}
	}
	a.Scopes = o.stringList("scopes")
	if o != nil && o.get("scopes") == nil {
		d.missing(o.at("scopes"))
	}
	if o != nil && o.get("scopes") != nil && (len(a.Scopes) < 1 || len(a.Scopes) > 50) {
		d.invalid(o.at("scopes"), "between 1 and 50 scopes")
	}
	for i, s := range a.Scopes {
		if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
			d.invalid(index(o.at("scopes"), i), "a scope is non-empty and has no whitespace")
		}
	}
	// A known provider's endpoints are filled in; a custom one has none.
	custom := a.AuthenticatorType == "custom"
	a.AuthorizeURL = o.httpURL("authorize_url", custom)
	a.TokenURL = o.httpURL("token_url", custom)
	a.RefreshURL = o.httpURL("refresh_url", false)
	a.RevokeURL = o.httpURL("revoke_url", false)
	a.RedirectURI = o.httpURL("redirect_uri", false)
	if o.get("configuration") != nil {
		if c := o.obj("configuration", false); c != nil && preset != nil {
			if key, problem := oauth.CheckConfiguration(a.AuthenticatorType, oauth.Configuration(c.m)); key != "" {
				d.invalid(c.at(key), "%s", problem)
			}
		}
		a.Configuration = o.rawJSON("configuration")
	}
	return a
}

// DecodeModel validates one data model given on its own (app data's create
// and patch, ctx.data.createModel): the manifest's rules, with error paths
// from the model's root (e.g. `fields[1].type`).
func DecodeModel(v any) (*Model, error) {
	return decodePart(v, "model", decodeModel)
}

// DecodeFunction validates one function given on its own (the functions
// API): the manifest's rules, paths from the function's root.
func DecodeFunction(v any) (*FunctionSpec, error) {
	return decodePart(v, "function", decodeFunction)
}

// DecodeAuthenticator validates one OAuth authenticator given on its own
// (the authenticators API): the manifest's rules, paths from its root.
func DecodeAuthenticator(v any) (*Authenticator, error) {
	return decodePart(v, "authenticator", decodeAuthenticator)
}

// DecodePipeline validates one pipeline given on its own (the pipelines
// API); refs are the app's agents and functions.
func DecodePipeline(v any, refs Refs) (*PipelineSpec, error) {
	return decodePart(v, "pipeline", func(d *decoder, o *object) PipelineSpec { return decodePipeline(d, o, refs) })
}

func decodePart[T any](v any, what string, decode func(*decoder, *object) T) (*T, error) {
	v, err := normalize(v)
	if err != nil {
		return nil, apperr.Invalid("body", "Invalid "+what+": "+err.Error())
	}
	d := &decoder{}
	part := decode(d, d.asObject(v, "", true))
	if d.err != nil {
		return nil, d.err
	}
	return &part, nil
}
