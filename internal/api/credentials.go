package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/oauth"
)

// CredentialPath is the address of one connection: the app and the
// authenticator's name.
type CredentialPath struct {
	AppID    string `path:"app_id" doc:"The app"`
	Provider string `path:"provider" doc:"The name of one of the app's OAuth authenticators"`
}

type listCredentialsInput struct {
	PageParams
	AppID string `query:"app_id" doc:"Only this app's connections"`
}

type listCredentialsOutput struct {
	Body struct {
		Connections []credential.Connection `json:"connections"`
		Page
	}
}

func (a *API) listCredentials(ctx context.Context, in *listCredentialsInput) (*listCredentialsOutput, error) {
	conns, total, err := a.Credentials.List(ctx, mustCaller(ctx), in.AppID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listCredentialsOutput{}
	out.Body.Connections = conns
	out.Body.Page = in.page(total)
	return out, nil
}

type getCredentialsInput struct {
	CredentialPath
	RequiredScopes string `query:"required_scopes" doc:"Comma-separated scopes the connection must hold (else InvalidScopeError, 403)"`
}

type credentialsOutput struct{ Body *credential.Credentials }

func (a *API) getCredentials(ctx context.Context, in *getCredentialsInput) (*credentialsOutput, error) {
	var required []string
	for s := range strings.SplitSeq(in.RequiredScopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			required = append(required, s)
		}
	}
	c, err := a.Credentials.Get(ctx, mustCaller(ctx), in.AppID, in.Provider, required)
	if err != nil {
		return nil, err
	}
	return &credentialsOutput{c}, nil
}

type connectedOutput struct {
	Body struct {
		IsConnected bool `json:"is_connected"`
	}
}

func (a *API) isConnected(ctx context.Context, in *CredentialPath) (*connectedOutput, error) {
	ok, err := a.Credentials.IsConnected(ctx, mustCaller(ctx), in.AppID, in.Provider)
	if err != nil {
		return nil, err
	}
	out := &connectedOutput{}
	out.Body.IsConnected = ok
	return out, nil
}

type refreshedOutput struct {
	Body struct {
		Refreshed bool `json:"refreshed" doc:"false when the connection has no refresh token"`
	}
}

func (a *API) refreshCredentials(ctx context.Context, in *CredentialPath) (*refreshedOutput, error) {
	ok, err := a.Credentials.Refresh(ctx, mustCaller(ctx), in.AppID, in.Provider)
	if err != nil {
		return nil, err
	}
	out := &refreshedOutput{}
	out.Body.Refreshed = ok
	return out, nil
}

type revokedOutput struct {
	Body struct {
		Revoked bool `json:"revoked" doc:"false when there was no connection"`
	}
}

func (a *API) revokeCredentials(ctx context.Context, in *CredentialPath) (*revokedOutput, error) {
	ok, err := a.Credentials.Revoke(ctx, mustCaller(ctx), in.AppID, in.Provider)
	if err != nil {
		return nil, err
	}
	out := &revokedOutput{}
	out.Body.Revoked = ok
	return out, nil
}

type validateScopesInput struct {
	CredentialPath
	Body struct {
		RequiredScopes []string `json:"required_scopes" maxItems:"50"`
	}
}

type validateScopesOutput struct {
	Body struct {
		Valid   bool     `json:"valid"`
		Missing []string `json:"missing"`
	}
}

func (a *API) validateScopes(ctx context.Context, in *validateScopesInput) (*validateScopesOutput, error) {
	valid, missing, err := a.Credentials.ValidateScopes(ctx, mustCaller(ctx), in.AppID, in.Provider, in.Body.RequiredScopes)
	if err != nil {
		return nil, err
	}
	out := &validateScopesOutput{}
	out.Body.Valid, out.Body.Missing = valid, missing
	return out, nil
}

type tokenInfoOutput struct{ Body *credential.TokenInfo }

func (a *API) tokenInfo(ctx context.Context, in *CredentialPath) (*tokenInfoOutput, error) {
	t, err := a.Credentials.TokenInfo(ctx, mustCaller(ctx), in.AppID, in.Provider)
	if err != nil {
		return nil, err
	}
	return &tokenInfoOutput{t}, nil
}

type userInfoOutput struct{ Body *oauth.UserInfo }

func (a *API) userInfo(ctx context.Context, in *CredentialPath) (*userInfoOutput, error) {
	u, err := a.Credentials.UserInfo(ctx, mustCaller(ctx), in.AppID, in.Provider)
	if err != nil {
		return nil, err
	}
	return &userInfoOutput{u}, nil
}

type authURLInput struct {
	CredentialPath
	ReturnTo string `query:"return_to" doc:"Where the browser returns after the callback: a path here, or a URL on this platform's origin (default /)"`
}

type authURLOutput struct {
	Body struct {
		URL string `json:"url" doc:"The provider's authorization page; open it in the browser of the user (logged in here)"`
	}
}

func (a *API) authURL(ctx context.Context, in *authURLInput) (*authURLOutput, error) {
	u, err := a.Credentials.AuthURL(ctx, mustCaller(ctx), in.AppID, in.Provider, in.ReturnTo)
	if err != nil {
		return nil, err
	}
	out := &authURLOutput{}
	out.Body.URL = u
	return out, nil
}

// redirectOutput is a redirect without a body.
type redirectOutput struct {
	Status   int
	Location string `header:"Location"`
}

func (a *API) authorize(ctx context.Context, in *authURLInput) (*redirectOutput, error) {
	u, err := a.Credentials.AuthURL(ctx, mustCaller(ctx), in.AppID, in.Provider, in.ReturnTo)
	if err != nil {
		return nil, err
	}
	return &redirectOutput{Status: http.StatusFound, Location: u}, nil
}

type callbackInput struct {
	Code             string `query:"code" doc:"The authorization code"`
	State            string `query:"state" doc:"The state issued when the flow started"`
	Error            string `query:"error" doc:"The provider's refusal (e.g. access_denied)"`
	ErrorDescription string `query:"error_description" doc:"Ignored: the provider's text is not shown"`
}

func (a *API) oauthCallback(ctx context.Context, in *callbackInput) (*redirectOutput, error) {
	to, err := a.Credentials.Callback(ctx, auth.CallerFrom(ctx), in.Code, in.State, in.Error)
	if err != nil {
		return nil, err
	}
	return &redirectOutput{Status: http.StatusSeeOther, Location: to}, nil
}
