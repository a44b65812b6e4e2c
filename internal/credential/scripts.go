package credential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/sandbox"
)

// Scripts is the credential service as a custom agent's ctx.credentials
// sees it (runtimes.Credentials): the run acts as its agent key would, for
// its user and app, and may hold tokens.
type Scripts struct{ *Service }

// maxScriptConnections bounds listConnections' answer.
const maxScriptConnections = 1000

// Call runs ctx.credentials.<method>(provider, …). Failures are apperr
// errors, thrown to the code with their kind as the error's name.
func (s Scripts) Call(ctx context.Context, userID, appID, method string, raw json.RawMessage) (json.RawMessage, error) {
	c := &auth.Caller{UserID: userID, Kind: auth.KindAgentKey, AppID: appID}
	list, err := sandbox.ParseArgs(raw)
	if err != nil {
		return nil, apperr.Invalid("arguments", err.Error())
	}
	arg := func(i int, dst any) error {
		var bad *sandbox.ArgError
		if errors.As(list.Decode(i, dst), &bad) {
			return apperr.Invalid("arguments", fmt.Sprintf("argument %d of %s: %v", bad.Position, method, bad.Err))
		}
		return nil
	}
	var provider string
	if method != "listConnections" {
		if err := arg(0, &provider); err != nil {
			return nil, err
		}
		if provider == "" {
			return nil, apperr.Invalid("provider", "ctx.credentials."+method+" needs the provider: an authenticator's name")
		}
	}
	var out any
	switch method {
	case "getCredentials":
		var opts struct {
			RequiredScopes []string `json:"required_scopes"`
		}
		if err := arg(1, &opts); err != nil {
			return nil, err
		}
		out, err = s.Get(ctx, c, appID, provider, opts.RequiredScopes)
	case "isConnected":
		out, err = s.IsConnected(ctx, c, appID, provider)
	case "listConnections":
		var conns []Connection
		conns, _, err = s.List(ctx, c, appID, maxScriptConnections, 0)
		out = conns
	case "refreshToken":
		out, err = s.Refresh(ctx, c, appID, provider)
	case "revokeConnection":
		out, err = s.Revoke(ctx, c, appID, provider)
	case "getAuthUrl":
		var returnTo string
		if err := arg(1, &returnTo); err != nil {
			return nil, err
		}
		out, err = s.AuthURL(ctx, c, appID, provider, returnTo)
	case "validateScopes":
		var required []string
		if err := arg(1, &required); err != nil {
			return nil, err
		}
		var valid bool
		var missing []string
		valid, missing, err = s.ValidateScopes(ctx, c, appID, provider, required)
		out = map[string]any{"valid": valid, "missing": missing}
	case "getTokenInfo":
		out, err = s.TokenInfo(ctx, c, appID, provider)
	case "getUserInfo":
		out, err = s.UserInfo(ctx, c, appID, provider)
	default:
		return nil, apperr.Invalid("method", "no such method: ctx.credentials."+method)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// Tools hands the credential service to HTTP tools (tool.TokenSource):
// the access token of the user's connection to an app's authenticator,
// refreshed as get_credentials refreshes it.
type Tools struct{ *Service }

// AccessToken is the fresh access token of userID's connection to
// authenticator in appID.
func (s Tools) AccessToken(ctx context.Context, userID, appID, authenticator string) (string, error) {
	c := &auth.Caller{UserID: userID, Kind: auth.KindAgentKey, AppID: appID}
	creds, err := s.Get(ctx, c, appID, authenticator, nil)
	if err != nil {
		return "", err
	}
	return creds.AccessToken, nil
}
