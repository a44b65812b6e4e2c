// Package httperr is the API's error answer: the one table from an error's
// kind (apperr) to its HTTP status, the public body {detail, status_code,
// error_type}, and the writer of that body. The API's operations and the
// front door (internal/router), which refuses requests before any route
// runs, answer errors through it alike.
package httperr

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/request"
)

// ErrorBody is every error response: {detail, status_code, error_type}.
type ErrorBody struct {
	Detail     string `json:"detail" doc:"What went wrong, safe to show"`
	StatusCode int    `json:"status_code" doc:"The HTTP status"`
	ErrorType  string `json:"error_type" doc:"ValidationError, AuthenticationError, PermissionError, NotFoundError, ConflictError, RateLimitError, PayloadTooLargeError, QuotaExceededError, BudgetExceededError, InternalError, or a credential error"`
}

func (e *ErrorBody) Error() string  { return e.Detail }
func (e *ErrorBody) GetStatus() int { return e.StatusCode }

// TransformSchema lists every error_type in the OpenAPI document.
func (ErrorBody) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	var kinds []string
	for k := range statusOf {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	if p := s.Properties["error_type"]; p != nil {
		p.Enum = nil
		for _, k := range kinds {
			p.Enum = append(p.Enum, k)
		}
		p.Description = "The class of the error"
	}
	return s
}

// statusOf is the one table from error kind to HTTP status.
var statusOf = map[apperr.Kind]int{
	apperr.Validation:          http.StatusBadRequest,
	apperr.Authentication:      http.StatusUnauthorized,
	apperr.Permission:          http.StatusForbidden,
	apperr.NotFound:            http.StatusNotFound,
	apperr.Conflict:            http.StatusConflict,
	apperr.RateLimit:           http.StatusTooManyRequests,
	apperr.PayloadTooLarge:     http.StatusRequestEntityTooLarge,
	apperr.QuotaExceeded:       http.StatusConflict,
	apperr.BudgetExceeded:      http.StatusTooManyRequests,
	apperr.Internal:            http.StatusInternalServerError,
	apperr.CredentialNotFound:  http.StatusNotFound,
	apperr.TokenExpired:        http.StatusUnauthorized,
	apperr.InvalidScope:        http.StatusForbidden,
	apperr.AuthFailed:          http.StatusBadGateway,
	apperr.ProviderUnsupported: http.StatusBadRequest,
}

// KindOfStatus names the error type of a status huma or the mux produced.
func KindOfStatus(status int) apperr.Kind {
	switch status {
	case http.StatusUnauthorized:
		return apperr.Authentication
	case http.StatusForbidden:
		return apperr.Permission
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return apperr.NotFound
	case http.StatusConflict:
		return apperr.Conflict
	case http.StatusTooManyRequests:
		return apperr.RateLimit
	case http.StatusRequestEntityTooLarge:
		return apperr.PayloadTooLarge
	}
	if status >= 500 {
		return apperr.Internal
	}
	return apperr.Validation
}

// The contract's fixed texts.
const (
	DetailInternal = "Internal server error"
	DetailTooLarge = "Request body too large: the limit is 1 MiB"
	// DetailRateLimited is the 429 text.
	DetailRateLimited = "Rate limit exceeded. Try again in 60 seconds."
)

// Body turns any error into the public body. Causes of internal errors are
// logged with the request id and never shown.
func Body(ctx context.Context, err error) *ErrorBody {
	var body *ErrorBody
	if errors.As(err, &body) {
		return body
	}
	if ae, ok := apperr.As(err); ok {
		status, known := statusOf[ae.Kind]
		if !known {
			status = http.StatusInternalServerError
		}
		if ae.Kind == apperr.QuotaExceeded && ae.TooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		// A 502 is the provider's failure, told as such; other 5xx are
		// ours and their causes stay in the log.
		if status < 500 || status == http.StatusBadGateway {
			return &ErrorBody{Detail: ae.Detail, StatusCode: status, ErrorType: string(ae.Kind)}
		}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		// A plain handler read past the router's cap (a body without a
		// length, which the router could not refuse up front).
		return &ErrorBody{Detail: DetailTooLarge, StatusCode: http.StatusRequestEntityTooLarge, ErrorType: string(apperr.PayloadTooLarge)}
	}
	if errors.Is(err, context.Canceled) {
		// The client went away; nobody reads this answer.
		return &ErrorBody{Detail: "Request cancelled", StatusCode: 499, ErrorType: string(apperr.Validation)}
	}
	request.Logger(ctx).ErrorContext(ctx, "internal error", "err", err)
	return &ErrorBody{Detail: DetailInternal, StatusCode: http.StatusInternalServerError, ErrorType: string(apperr.Internal)}
}

// Write answers a plain net/http request with err's body (and, for a 429,
// when to try again).
func Write(w http.ResponseWriter, r *http.Request, err error) {
	WriteBody(w, Body(r.Context(), err))
}

// WriteBody writes a body already made.
func WriteBody(w http.ResponseWriter, body *ErrorBody) {
	if body.StatusCode == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "60")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(body.StatusCode)
	_ = json.NewEncoder(w).Encode(body)
}
