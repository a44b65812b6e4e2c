package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// ErrorBody is every error response: {detail, status_code, error_type}.
type ErrorBody struct {
	Detail     string `json:"detail" doc:"What went wrong, safe to show"`
	StatusCode int    `json:"status_code" doc:"The HTTP status"`
	ErrorType  string `json:"error_type" doc:"ValidationError, AuthenticationError, PermissionError, NotFoundError, ConflictError, RateLimitError, PayloadTooLargeError, QuotaExceededError, InternalError, or a credential error"`
}

func (e *ErrorBody) Error() string  { return e.Detail }
func (e *ErrorBody) GetStatus() int { return e.StatusCode }

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
	apperr.Internal:            http.StatusInternalServerError,
	apperr.CredentialNotFound:  http.StatusNotFound,
	apperr.TokenExpired:        http.StatusUnauthorized,
	apperr.InvalidScope:        http.StatusForbidden,
	apperr.AuthFailed:          http.StatusBadGateway,
	apperr.ProviderUnsupported: http.StatusBadRequest,
}

// kindOfStatus names the error type of a status huma or the mux produced.
func kindOfStatus(status int) apperr.Kind {
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

const (
	detailInternal = "Internal server error"
	detailTooLarge = "Request body too large: the limit is 1 MiB"
	// DetailRateLimited is the contract's 429 text.
	DetailRateLimited = "Rate limit exceeded. Try again in 60 seconds."
)

// errorBody turns any error into the public body. Causes of internal errors
// are logged with the request id and never shown.
func errorBody(ctx context.Context, err error) *ErrorBody {
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
	if errors.Is(err, context.Canceled) {
		// The client went away; nobody reads this answer.
		return &ErrorBody{Detail: "Request cancelled", StatusCode: 499, ErrorType: string(apperr.Validation)}
	}
	logger(ctx).ErrorContext(ctx, "internal error", "err", err)
	return &ErrorBody{Detail: detailInternal, StatusCode: http.StatusInternalServerError, ErrorType: string(apperr.Internal)}
}

// humaError is huma's error hook: validation failures, oversized bodies and
// handler errors all pass through here, so every answer has our shape.
func humaError(hctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
	ctx := context.Background()
	if hctx != nil {
		ctx = hctx.Context()
	}
	body := toErrorBody(ctx, status, msg, errs)
	if hctx != nil && body.StatusCode == http.StatusTooManyRequests {
		hctx.SetHeader("Retry-After", "60")
	}
	return body
}

func toErrorBody(ctx context.Context, status int, msg string, errs []error) *ErrorBody {
	for _, e := range errs {
		var body *ErrorBody
		if _, ok := apperr.As(e); ok || errors.As(e, &body) {
			return errorBody(ctx, e)
		}
	}
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return &ErrorBody{Detail: detailTooLarge, StatusCode: status, ErrorType: string(apperr.PayloadTooLarge)}
	case status >= 500:
		cause := errors.Join(errs...)
		if cause == nil {
			cause = errors.New(msg)
		}
		return errorBody(ctx, cause)
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return &ErrorBody{Detail: describeValidation(msg, errs), StatusCode: http.StatusBadRequest, ErrorType: string(apperr.Validation)}
	}
	return &ErrorBody{Detail: capitalize(msg), StatusCode: status, ErrorType: string(kindOfStatus(status))}
}

// describeValidation words huma's first validation detail the contract's way:
// "Missing required field: input_data", "Invalid value for field name:
// expected string", "Malformed JSON body: …". The offending value is not
// echoed: it may be a secret.
func describeValidation(msg string, errs []error) string {
	for _, e := range errs {
		var d huma.ErrorDetailer
		if !errors.As(e, &d) {
			continue
		}
		detail := d.ErrorDetail()
		field := fieldName(detail.Location)
		var missing string
		if _, err := fmt.Sscanf(detail.Message, "expected required property %s to be present", &missing); err == nil {
			return "Missing required field: " + joinField(field, missing)
		}
		if field == "" {
			var syntax *json.SyntaxError
			if errors.As(e, &syntax) || detail.Location == "body" {
				return "Malformed JSON body: " + detail.Message
			}
			return capitalize(detail.Message)
		}
		return fmt.Sprintf("Invalid value for field %s: %s", field, detail.Message)
	}
	return capitalize(msg)
}

// fieldName strips huma's location prefix: body.a.b → a.b, query.limit →
// limit, path.key_id → key_id.
func fieldName(location string) string {
	for _, p := range []string{"body", "query", "path", "header", "cookie"} {
		if location == p {
			return ""
		}
		if rest, ok := strings.CutPrefix(location, p+"."); ok {
			return rest
		}
	}
	return location
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeError answers a plain net/http request with the error body.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	body := errorBody(r.Context(), err)
	if body.StatusCode == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "60")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(body.StatusCode)
	_ = json.NewEncoder(w).Encode(body)
}
