package apps

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Merged is what a PATCH of an app part leaves: cur's fields (the part's
// present values) with those patch names replaced, as the decoded JSON a
// part's decoder validates whole, so a patch is checked as a create is.
func Merged(cur, patch map[string]any) map[string]any {
	for k := range cur {
		if v, ok := patch[k]; ok {
			cur[k] = v
		}
	}
	raw, _ := json.Marshal(cur)
	var merged map[string]any
	_ = json.Unmarshal(raw, &merged)
	return merged
}

// NameTaken turns the store's conflict on saving an app's part named name
// (a function, a pipeline) into the 409 callers see; other errors pass.
func NameTaken(err error, part, name string) error {
	if errors.Is(err, store.ErrConflict) {
		article := "a"
		if strings.ContainsRune("aeiou", rune(part[0])) {
			article = "an"
		}
		return apperr.Newf(apperr.Conflict, "The app already has %s %s named %q", article, part, name)
	}
	return err
}

// Manager resolves an app the caller may change (Service.ManagedApp).
type Manager interface {
	ManagedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
}

// CreatePart is the create every app part shares (functions, pipelines,
// authenticators): the caller must be able to change the app; save
// validates the part, writes it into app and says its name, so that a
// name another part of the app holds becomes the 409 naming kind.
func CreatePart(ctx context.Context, m Manager, c *auth.Caller, appID, kind string, save func(app *store.App) (name string, err error)) error {
	app, err := m.ManagedApp(ctx, c, appID)
	if err != nil {
		return err
	}
	name, err := save(app)
	return NameTaken(err, kind, name)
}

// UpdatePart is the patch every app part shares: the caller must be able
// to change the part's app; save gets the patch laid over the part's
// present fields cur (Merged), validates the result whole and writes it.
func UpdatePart(ctx context.Context, m Manager, c *auth.Caller, appID, kind string, cur, patch map[string]any, save func(merged map[string]any) (name string, err error)) error {
	if _, err := m.ManagedApp(ctx, c, appID); err != nil {
		return err
	}
	name, err := save(Merged(cur, patch))
	return NameTaken(err, kind, name)
}

// DeletePart runs del once the caller is found able to change the app.
func DeletePart(ctx context.Context, m Manager, c *auth.Caller, appID string, del func() error) error {
	if _, err := m.ManagedApp(ctx, c, appID); err != nil {
		return err
	}
	return del()
}

// BodyAppID takes the required app_id out of a create's body, which the
// part's decoder does not know.
func BodyAppID(body map[string]any) (string, error) {
	appID, _ := body["app_id"].(string)
	if appID == "" {
		return "", apperr.Invalid("app_id", "Missing required field: app_id")
	}
	delete(body, "app_id")
	return appID, nil
}
