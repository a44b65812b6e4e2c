package openaicompat

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Catalog finds the LLM agents a caller reaches by their model names.
type Catalog struct {
	Apps  *apps.Service
	Store *store.Store
}

// Entry is one agent the caller reaches, with its model name.
type Entry struct {
	Agent *store.Agent
	Model Model
}

// page is how many agents one read of the list takes.
const page = 500

// Models lists the LLM agents c reaches (a bound key: its app's), system
// agents first, then in creation order.
func (k *Catalog) Models(ctx context.Context, c *auth.Caller) ([]Entry, error) {
	slugs := map[string]string{}
	var out []Entry
	for offset := 0; ; offset += page {
		agents, total, err := k.Apps.Agents(ctx, c, "", page, offset)
		if err != nil {
			return nil, err
		}
		for i := range agents {
			a := &agents[i]
			if a.AgentTypeID != "llm" {
				continue
			}
			slug, err := k.slug(ctx, slugs, a.AppID)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, err
			}
			out = append(out, Entry{Agent: a, Model: NewModel(slug, a)})
		}
		if len(agents) == 0 || offset+len(agents) >= total {
			return out, nil
		}
	}
}

func (k *Catalog) slug(ctx context.Context, slugs map[string]string, appID string) (string, error) {
	if appID == "" {
		return "", nil
	}
	if s, ok := slugs[appID]; ok {
		return s, nil
	}
	app, err := k.Store.AppGet(ctx, appID)
	if err != nil {
		return "", err
	}
	slugs[appID] = app.Slug
	return app.Slug, nil
}

// Resolve is the LLM agent model names: `<app slug>/<agent name>`, a
// system agent's name, or an agent's id; the agent comes back as
// activating it needs it (apps' VisibleAgent: a disabled one is a 409),
// for activation.Request.Agent. Anything else, or an agent that is not
// an LLM agent, is ModelNotFound. A name is looked up, not found in the
// list of Models: every completion resolves its model, in one read.
func (k *Catalog) Resolve(ctx context.Context, c *auth.Caller, model string) (*store.Agent, error) {
	var a *store.Agent
	var err error
	switch slug, name, inApp := strings.Cut(model, "/"); {
	case uuid.Validate(model) == nil:
		a, err = k.Apps.VisibleAgent(ctx, c, model)
	case inApp:
		a, _, err = k.Apps.VisibleAgentInApp(ctx, c, "", slug, name)
	default:
		if a, err = k.Store.AgentGetByName(ctx, "", model); err == nil {
			a, err = k.Apps.VisibleAgent(ctx, c, a.ID)
		}
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, apps.ErrAgentNotFound) || (err == nil && a.AgentTypeID != "llm") {
		return nil, ModelNotFound(model)
	}
	return a, err
}
