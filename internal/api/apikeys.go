package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// APIKey is a key as listed: never the key itself.
type APIKey struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	KeyPrefix  string     `json:"key_prefix" doc:"The key's first characters, to recognise it"`
	Scopes     []string   `json:"scopes" enum:"read:all,write:all,admin,app:access"`
	AppID      *string    `json:"app_id" doc:"The app the key is bound to, or null"`
	ExpiresAt  *time.Time `json:"expires_at" doc:"null: never expires"`
	LastUsedAt *time.Time `json:"last_used_at"`
	CreatedAt  time.Time  `json:"created_at"`
}

func apiKeyOut(k *store.APIKey) APIKey {
	out := APIKey{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, Scopes: k.Scopes,
		ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, CreatedAt: k.CreatedAt}
	if k.AppID != "" {
		out.AppID = &k.AppID
	}
	return out
}

type createAPIKeyInput struct {
	Body struct {
		Name      string     `json:"name" doc:"A label for the key"`
		Scopes    []string   `json:"scopes" enum:"read:all,write:all,admin,app:access" doc:"read:all: GET and HEAD; write:all: every method; admin: everything, admin endpoints included (admins only); app:access: using apps, not managing them"`
		ExpiresAt *time.Time `json:"expires_at,omitempty" required:"false" doc:"When the key stops working (RFC 3339); omitted: never"`
		AppID     string     `json:"app_id,omitempty" required:"false" doc:"Bind the key to one of your apps"`
	}
}

type createAPIKeyOutput struct {
	Body struct {
		ID        int64      `json:"id"`
		Name      string     `json:"name"`
		Key       string     `json:"key" doc:"The key: shown this once, store it now"`
		KeyPrefix string     `json:"key_prefix"`
		Scopes    []string   `json:"scopes" enum:"read:all,write:all,admin,app:access"`
		ExpiresAt *time.Time `json:"expires_at"`
		CreatedAt time.Time  `json:"created_at"`
		AppID     *string    `json:"app_id"`
	}
}

func (a *API) createAPIKey(ctx context.Context, in *createAPIKeyInput) (*createAPIKeyOutput, error) {
	k, err := a.Auth.CreateAPIKey(ctx, mustCaller(ctx), auth.KeyRequest{
		Name: in.Body.Name, Scopes: in.Body.Scopes, ExpiresAt: in.Body.ExpiresAt, AppID: in.Body.AppID})
	if err != nil {
		return nil, err
	}
	listed := apiKeyOut(&k.APIKey)
	out := &createAPIKeyOutput{}
	b := &out.Body
	b.ID, b.Name, b.Key, b.KeyPrefix, b.Scopes = k.ID, k.Name, k.Key, k.KeyPrefix, k.Scopes
	b.ExpiresAt, b.CreatedAt, b.AppID = k.ExpiresAt, k.CreatedAt, listed.AppID
	return out, nil
}

type listAPIKeysOutput struct {
	Body struct {
		APIKeys []APIKey `json:"api_keys"`
		Page
	}
}

func (a *API) listAPIKeys(ctx context.Context, in *struct{ PageParams }) (*listAPIKeysOutput, error) {
	keys, total, err := a.Auth.APIKeys(ctx, mustCaller(ctx), in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listAPIKeysOutput{}
	out.Body.APIKeys, out.Body.Page = mapAll(keys, apiKeyOut), in.page(total)
	return out, nil
}

type revokeAPIKeyInput struct {
	KeyID int64 `path:"key_id" doc:"The key's id"`
}

func (a *API) revokeAPIKey(ctx context.Context, in *revokeAPIKeyInput) (*struct{}, error) {
	return nil, a.Auth.RevokeAPIKey(ctx, mustCaller(ctx), in.KeyID)
}
