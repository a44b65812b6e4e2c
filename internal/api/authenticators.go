package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
)

// OAuthAuthenticator is an app's registration at an OAuth 2.0 provider.
// Its client secret is write-only: has_client_secret says whether there is
// one.
type OAuthAuthenticator struct {
	ID                string          `json:"id" format:"uuid"`
	AppID             string          `json:"app_id" format:"uuid"`
	Name              string          `json:"name" doc:"Unique in the app; the credential routes' {provider}"`
	AuthenticatorType string          `json:"authenticator_type" enum:"custom,google,slack,microsoft,yahoo"`
	ClientID          string          `json:"client_id" doc:"Empty for a manifest's authenticator until you set it"`
	HasClientSecret   bool            `json:"has_client_secret" doc:"Whether a client secret is set (it is never returned); false for a manifest's authenticator until you PATCH one"`
	Scopes            []string        `json:"scopes"`
	AuthorizeURL      string          `json:"authorize_url" doc:"For a known type, its provider's unless you gave your own"`
	TokenURL          string          `json:"token_url" doc:"For a known type, its provider's unless you gave your own"`
	RefreshURL        string          `json:"refresh_url" doc:"Empty: tokens are refreshed at token_url"`
	RevokeURL         string          `json:"revoke_url" doc:"Empty: the provider has no revocation endpoint"`
	RedirectURI       string          `json:"redirect_uri" doc:"The platform's OAuth callback, /api/v1/oauth/callback on AP_PUBLIC_URL"`
	Configuration     json.RawMessage `json:"configuration"`
	IsActive          bool            `json:"is_active"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
}

func authenticatorOut(a *store.Authenticator) OAuthAuthenticator {
	conf := a.Configuration
	if len(conf) == 0 {
		conf = json.RawMessage("{}")
	}
	scopes := a.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return OAuthAuthenticator{ID: a.ID, AppID: a.AppID, Name: a.Name, AuthenticatorType: a.AuthenticatorType, ClientID: a.ClientID,
		HasClientSecret: a.ClientSecretEnc != "", Scopes: scopes, AuthorizeURL: a.AuthorizeURL, TokenURL: a.TokenURL,
		RefreshURL: a.RefreshURL, RevokeURL: a.RevokeURL, RedirectURI: a.RedirectURI, Configuration: conf, IsActive: a.IsActive,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

// AuthenticatorCreate documents the body of a new authenticator; the
// authenticator domain decodes it, naming the exact field at fault.
type AuthenticatorCreate struct {
	Name              string          `json:"name" minLength:"1" maxLength:"100" doc:"Unique in the app"`
	AuthenticatorType string          `json:"authenticator_type" enum:"custom,google,slack,microsoft,yahoo"`
	ClientID          string          `json:"client_id" doc:"Checked per type: Google's end in .apps.googleusercontent.com, Microsoft's are GUIDs, Slack's are digits.digits"`
	ClientSecret      string          `json:"client_secret" writeOnly:"true" doc:"Stored encrypted, never returned"`
	Scopes            []string        `json:"scopes" minItems:"1" maxItems:"50" doc:"No whitespace inside a scope"`
	AuthorizeURL      string          `json:"authorize_url,omitempty" doc:"Required for custom; a known type's defaults to its provider's. HTTPS in production"`
	TokenURL          string          `json:"token_url,omitempty" doc:"Required for custom; a known type's defaults to its provider's"`
	RefreshURL        string          `json:"refresh_url,omitempty" doc:"Where tokens are refreshed, when not at token_url"`
	RevokeURL         string          `json:"revoke_url,omitempty" doc:"RFC 7009 revocation endpoint; a known type's defaults to its provider's"`
	RedirectURI       string          `json:"redirect_uri,omitempty" doc:"Defaults to, and must be, /api/v1/oauth/callback on AP_PUBLIC_URL"`
	Configuration     json.RawMessage `json:"configuration,omitempty"`
	IsActive          *bool           `json:"is_active,omitempty" doc:"Default true"`
}

// AuthenticatorPatch documents a PATCH: any subset of the fields, and a
// new client_secret.
type AuthenticatorPatch struct {
	Name              *string         `json:"name,omitempty"`
	AuthenticatorType *string         `json:"authenticator_type,omitempty" enum:"custom,google,slack,microsoft,yahoo"`
	ClientID          *string         `json:"client_id,omitempty"`
	ClientSecret      *string         `json:"client_secret,omitempty" writeOnly:"true" doc:"A new client secret; stored encrypted, never returned"`
	Scopes            []string        `json:"scopes,omitempty" minItems:"1" maxItems:"50"`
	AuthorizeURL      *string         `json:"authorize_url,omitempty" doc:"Empty: a known type's provider's"`
	TokenURL          *string         `json:"token_url,omitempty" doc:"Empty: a known type's provider's"`
	RefreshURL        *string         `json:"refresh_url,omitempty"`
	RevokeURL         *string         `json:"revoke_url,omitempty" doc:"Empty: a known type's provider's"`
	RedirectURI       *string         `json:"redirect_uri,omitempty"`
	Configuration     json.RawMessage `json:"configuration,omitempty" doc:"Replaces the whole configuration"`
	IsActive          *bool           `json:"is_active,omitempty"`
}

type authenticatorOutput struct {
	Body OAuthAuthenticator
}

type listAuthenticatorsOutput struct {
	Body struct {
		Authenticators []OAuthAuthenticator `json:"authenticators"`
		Page
	}
}

func (a *API) authenticatorPage(ctx context.Context, appID string, p PageParams) (*listAuthenticatorsOutput, error) {
	items, total, err := a.Authenticators.List(ctx, mustCaller(ctx), appID, p.Limit, p.Offset)
	if err != nil {
		return nil, err
	}
	out := &listAuthenticatorsOutput{}
	out.Body.Authenticators = mapAll(items, authenticatorOut)
	out.Body.Page = p.page(total)
	return out, nil
}

type listAuthenticatorsInput struct {
	PageParams
	AppID string `query:"app_id" required:"true" doc:"The app whose authenticators to list"`
}

func (a *API) listAuthenticators(ctx context.Context, in *listAuthenticatorsInput) (*listAuthenticatorsOutput, error) {
	return a.authenticatorPage(ctx, in.AppID, in.PageParams)
}

type appAuthenticatorsInput struct {
	AppID string `path:"app_id"`
	PageParams
}

func (a *API) listServiceProviders(ctx context.Context, in *appAuthenticatorsInput) (*listAuthenticatorsOutput, error) {
	return a.authenticatorPage(ctx, in.AppID, in.PageParams)
}

type createAuthenticatorInput struct {
	AppID   string `path:"app_id"`
	RawBody []byte `contentType:"application/json"`
}

func (a *API) createAuthenticator(ctx context.Context, in *createAuthenticatorInput) (*authenticatorOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	au, err := a.Authenticators.Create(ctx, mustCaller(ctx), in.AppID, body)
	if err != nil {
		return nil, err
	}
	return &authenticatorOutput{authenticatorOut(au)}, nil
}

type authenticatorIDInput struct {
	AuthenticatorID string `path:"authenticator_id"`
}

func (a *API) getAuthenticator(ctx context.Context, in *authenticatorIDInput) (*authenticatorOutput, error) {
	au, err := a.Authenticators.Get(ctx, mustCaller(ctx), in.AuthenticatorID)
	if err != nil {
		return nil, err
	}
	return &authenticatorOutput{authenticatorOut(au)}, nil
}

type updateAuthenticatorInput struct {
	AuthenticatorID string `path:"authenticator_id"`
	RawBody         []byte `contentType:"application/json"`
}

func (a *API) updateAuthenticator(ctx context.Context, in *updateAuthenticatorInput) (*authenticatorOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	au, err := a.Authenticators.Update(ctx, mustCaller(ctx), in.AuthenticatorID, body)
	if err != nil {
		return nil, err
	}
	return &authenticatorOutput{authenticatorOut(au)}, nil
}

func (a *API) deleteAuthenticator(ctx context.Context, in *authenticatorIDInput) (*struct{}, error) {
	return nil, a.Authenticators.Delete(ctx, mustCaller(ctx), in.AuthenticatorID)
}
