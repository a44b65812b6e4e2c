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
	"github.com/agentplatform/agentplatform/internal/httperr"
)

// ErrorBody is every error response: {detail, status_code, error_type}
// (internal/httperr, which the front door answers with too).
type ErrorBody = httperr.ErrorBody

const (
	detailInternal = httperr.DetailInternal
	detailTooLarge = httperr.DetailTooLarge
	// DetailRateLimited is the contract's 429 text.
	DetailRateLimited = httperr.DetailRateLimited
)

// errorBody turns any error into the public body (httperr.Body).
func errorBody(ctx context.Context, err error) *ErrorBody { return httperr.Body(ctx, err) }

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
	return &ErrorBody{Detail: capitalize(msg), StatusCode: status, ErrorType: string(httperr.KindOfStatus(status))}
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
func writeError(w http.ResponseWriter, r *http.Request, err error) { httperr.Write(w, r, err) }
