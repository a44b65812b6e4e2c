package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/openaicompat"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// The app page's last two sections: how clients reach the app (its MCP
// URL, the OpenAI base URL and the model names of its LLM agents, with
// the README's client configurations filled in), and the remote MCP
// servers its agents use. A server's tools are listed only when asked
// ("Show tools": a POST, so the router's cross-origin check guards it as
// it guards the API's changes): listing goes over the network to a server
// that may be slow or down, which must not slow or break the page.

// keyPlaceholder stands for the reader's API key in the snippets: the
// page never shows a key (the keys page shows one once, when created).
const keyPlaceholder = "ak_…"

// connectView is the Connect section.
type connectView struct {
	MCPURL, OpenAIBaseURL string
	// Models are the model names of the app's LLM agents on the OpenAI
	// endpoint, <app slug>/<agent name>.
	Models []string
	// Cursor and Claude are the two clients' configurations (README "MCP
	// and OpenAI clients").
	Cursor, Claude string
}

// connectFor is app's Connect section, for its agents (the page's list).
func (p *Pages) connectFor(app *store.App, agents []agentView) connectView {
	base := strings.TrimRight(p.PublicURL, "/")
	v := connectView{MCPURL: base + "/api/v1/apps/" + app.ID + "/mcp",
		OpenAIBaseURL: base + strings.TrimSuffix(openaicompat.Prefix, "/")}
	for _, a := range agents {
		if a.AgentTypeID == "llm" {
			v.Models = append(v.Models, app.Slug+"/"+a.Name)
		}
	}
	// Structs, not maps: the keys in the README's order.
	type cursorServer struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	type claudeServer struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	v.Cursor = snippet(map[string]map[string]cursorServer{"mcpServers": {app.Slug: {URL: v.MCPURL,
		Headers: map[string]string{"Authorization": "Bearer " + keyPlaceholder}}}})
	v.Claude = snippet(map[string]map[string]claudeServer{"mcpServers": {app.Slug: {Command: "npx",
		Args: []string{"mcp-remote", v.MCPURL, "--header", "Authorization: Bearer " + keyPlaceholder}}}})
	return v
}

// snippet is v as indented JSON for a person to paste (the template
// escapes it for the page; no \u003c escapes here).
func snippet(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSpace(buf.String())
}

// mcpServersView is the MCP servers section.
type mcpServersView struct {
	AppID   string
	Servers []store.MCPServer
	Total   int
}

// mcpToolsView is what "Show tools" shows of a server: its tools, or why
// they could not be listed.
type mcpToolsView struct {
	Server string
	Tools  []mcpToolView
	Error  string
}

// mcpToolView is one tool as the app's agents' models see it.
type mcpToolView struct {
	Name, Description string
	// Parameters is its JSON Schema, indented.
	Parameters string
}

// errNoMCPTools is the text shown where no lister was wired (Deps).
const errNoMCPTools = "Listing MCP servers' tools is not available here."

// mcpToolsFragment lists the tools of the caller's app's MCP server
// {server_id} as a fragment of the app page. Another user's app or
// server is the 404 page; a server that cannot be listed (down, refused
// by the egress guard, its authenticator not connected) is the fragment
// with the reason, not an error page.
func (p *Pages) mcpToolsFragment(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	app, err := p.Apps.OwnedApp(ctx, c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	ms, err := p.Apps.MCPServer(ctx, c, app.ID, r.PathValue("server_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	v := mcpToolsView{Server: ms.Name}
	if p.MCPTools == nil {
		v.Error = errNoMCPTools
		p.fragment(w, r, "app.html", "mcptools", v)
		return
	}
	tools, err := p.MCPTools.MCPServerTools(ctx, c.UserID, app.ID, ms.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Deleted since the page was read, or the app is not the
		// caller's own: an admin looking at another user's app lists
		// nothing with that user's connected accounts.
		v.Error = "This MCP server is not in your app (any more): reload the page."
	case errors.As(err, new(*tool.MCPListError)):
		// What failed in the connection, for the app's owner (the URL's
		// secrets redacted).
		p.Log.Info("web: MCP server tools", "app_id", app.ID, "server", ms.Name, "err", err)
		v.Error = err.Error()
	case err != nil:
		// The platform's own failure (its database): not the owner's to read.
		p.Log.Error("web: MCP server tools", "app_id", app.ID, "server", ms.Name, "err", err)
		v.Error = "The platform could not list them: try again later."
	}
	for _, t := range tools {
		v.Tools = append(v.Tools, mcpToolView{Name: t.Name, Description: t.Description, Parameters: indented(t.Parameters)})
	}
	p.fragment(w, r, "app.html", "mcptools", v)
}

// indented is a tool's parameters schema for a person to read ({"type":
// "object"} when it has none).
func indented(schema json.RawMessage) string {
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, schema, "", "  ") != nil {
		return string(schema)
	}
	return buf.String()
}
