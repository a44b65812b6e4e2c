package api

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/localpath"
)

// formInput is a register or login call: a form-encoded body (the contract)
// or a JSON object with the same fields.
type formInput struct {
	Accept      string `header:"Accept"`
	ContentType string `header:"Content-Type"`
	RawBody     []byte `contentType:"application/x-www-form-urlencoded"`
}

// fields decodes the body whichever way it came.
func (in *formInput) fields() (url.Values, error) {
	mt, _, _ := mime.ParseMediaType(in.ContentType)
	if mt == "application/json" {
		var m map[string]any
		if err := json.Unmarshal(in.RawBody, &m); err != nil {
			return nil, apperr.New(apperr.Validation, "Malformed JSON body: "+err.Error())
		}
		v := url.Values{}
		for k, val := range m {
			s, ok := val.(string)
			if !ok {
				return nil, apperr.Invalid(k, "Invalid value for field "+k+": expected string")
			}
			v.Set(k, s)
		}
		return v, nil
	}
	v, err := url.ParseQuery(string(in.RawBody))
	if err != nil {
		return nil, apperr.New(apperr.Validation, "Malformed form body")
	}
	return v, nil
}

// authOutput is a redirect for browsers or a JSON body for programs. A
// []byte Body is written as is: an empty one means no body at all.
type authOutput struct {
	Status    int
	Location  string `header:"Location"`
	SetCookie string `header:"Set-Cookie"`
	Body      any
}

func redirect(to string) *authOutput {
	return &authOutput{Status: http.StatusSeeOther, Location: to, Body: []byte{}}
}

// formRoute registers an auth form operation and documents its fields.
func (a *API) formRoute(op huma.Operation, rule auth.Rule, h func(context.Context, *formInput) (*authOutput, error)) {
	op.Description = "Form-encoded (application/x-www-form-urlencoded; a JSON object is accepted too). " +
		"Browsers get a 303 redirect; send `Accept: application/json` for a JSON answer."
	register(a, op, rule, h)
	fields := map[string]*huma.Schema{
		"email":    {Type: "string", Format: "email"},
		"password": {Type: "string", MinLength: ptr(auth.MinPasswordLen)},
	}
	required := []string{"email", "password"}
	switch op.OperationID {
	case "login":
		fields["next"] = &huma.Schema{Type: "string", Description: "For browsers: the path on this platform the 303 leads to " +
			"after the login (a path only, such as `/apps/…`; anything else leads to `/`). A JSON answer ignores it."}
	case "register":
		fields["next"] = &huma.Schema{Type: "string", Description: "For browsers: the path on this platform to return to after " +
			"the login that follows; the 303 leads to `/login?next=<it>` (a path only, such as `/apps/…`; anything else is dropped). " +
			"A JSON answer ignores it."}
	}
	if op.OperationID == "register" {
		fields["confirm_password"] = &huma.Schema{Type: "string"}
		fields["first_name"] = &huma.Schema{Type: "string", MaxLength: ptr(100)}
		fields["last_name"] = &huma.Schema{Type: "string", MaxLength: ptr(100)}
		required = append(required, "confirm_password")
	}
	schema := &huma.Schema{Type: "object", Properties: fields, Required: required}
	doc := a.huma.OpenAPI().Paths[op.Path].Post
	doc.RequestBody.Content = map[string]*huma.MediaType{
		"application/x-www-form-urlencoded": {Schema: schema},
		"application/json":                  {Schema: schema},
	}
}

func ptr[T any](v T) *T { return &v }

func (a *API) register(ctx context.Context, in *formInput) (*authOutput, error) {
	f, err := in.fields()
	if err != nil {
		return nil, err
	}
	u, err := a.Auth.Register(ctx, auth.Registration{
		Email: f.Get("email"), Password: f.Get("password"), ConfirmPassword: f.Get("confirm_password"),
		FirstName: f.Get("first_name"), LastName: f.Get("last_name"),
	})
	if err != nil {
		return nil, err
	}
	if wantsJSON(in.Accept) {
		return &authOutput{Status: http.StatusCreated, Body: userOut(u)}, nil
	}
	// The login page carries next on to where the browser was going,
	// under the same rule as the login's own next (an open redirect
	// otherwise).
	if to := f.Get("next"); to != "/" && localpath.Is(to) {
		return redirect("/login?" + url.Values{"next": {to}}.Encode()), nil
	}
	return redirect("/login"), nil
}

// LoginResult is the JSON answer of a login.
type LoginResult struct {
	AccessToken string    `json:"access_token" doc:"The session token: send it as Authorization: Bearer st_…"`
	TokenType   string    `json:"token_type" enum:"bearer"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func (a *API) login(ctx context.Context, in *formInput) (*authOutput, error) {
	// Failed logins are limited per client address, far below the general
	// rate: a password guesser gets a handful of tries a minute. Each try
	// is paid for before the password is checked, so that guesses sent all
	// at once get no more tries than guesses sent one after another; only
	// a wrong credential keeps the payment.
	release, ok := a.logins.Take(clientIP(ctx))
	if !ok {
		return nil, apperr.New(apperr.RateLimit, DetailRateLimited)
	}
	f, err := in.fields()
	var sess *auth.NewSession
	if err == nil {
		sess, err = a.Auth.Login(ctx, f.Get("email"), f.Get("password"))
	}
	if err != nil {
		if !apperr.Is(err, apperr.Authentication) {
			release()
		}
		return nil, err
	}
	release()
	cookie := a.sessionCookie(sess.Token, sess.ExpiresAt)
	if wantsJSON(in.Accept) {
		return &authOutput{Status: http.StatusOK, SetCookie: cookie,
			Body: LoginResult{AccessToken: sess.Token, TokenType: "bearer", ExpiresAt: sess.ExpiresAt}}, nil
	}
	// A browser goes on to the page that sent it to log in, if that is a
	// page of this site: anything else would be an open redirect.
	out := redirect(localpath.Or(f.Get("next"), "/"))
	out.SetCookie = cookie
	return out, nil
}

type logoutInput struct {
	Accept        string `header:"Accept"`
	Authorization string `header:"Authorization"`
	Cookie        string `header:"Cookie"`
}

func (a *API) logout(ctx context.Context, in *logoutInput) (*authOutput, error) {
	token, _ := auth.BearerToken(in.Authorization)
	if token == "" {
		token = auth.CookieToken(in.Cookie)
	}
	if token != "" {
		if err := a.Auth.Logout(ctx, token); err != nil {
			return nil, err
		}
	}
	cleared := a.sessionCookie("", time.Unix(0, 0))
	if wantsJSON(in.Accept) {
		return &authOutput{Status: http.StatusNoContent, SetCookie: cleared, Body: []byte{}}, nil
	}
	out := redirect("/login")
	out.SetCookie = cleared
	return out, nil
}

// sessionCookie is the Set-Cookie value for a session token; an empty token
// clears the cookie.
func (a *API) sessionCookie(token string, expires time.Time) string {
	c := &http.Cookie{Name: SessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: a.Config.Production(), Expires: expires}
	if token == "" {
		c.MaxAge = -1
	}
	return c.String()
}
