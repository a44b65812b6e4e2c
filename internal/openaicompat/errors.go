package openaicompat

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/httperr"
)

// ErrorDetail is OpenAI's error object; param and code are null when
// they do not apply.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ErrorBody is every error answer of the endpoint: {"error": {…}}, the
// shape OpenAI's SDKs parse (not the platform's {detail, status_code,
// error_type}).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// Error is an error already in OpenAI's terms, with its status.
type Error struct {
	Status int
	Body   ErrorBody
}

func (e *Error) Error() string { return e.Body.Error.Message }

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ModelNotFound is the 404 of a model that is no agent the caller reaches.
func ModelNotFound(model string) *Error {
	return &Error{Status: http.StatusNotFound, Body: ErrorBody{Error: ErrorDetail{
		Message: "The model `" + model + "` does not exist or you do not have access to it.",
		Type:    "invalid_request_error", Param: ptr("model"), Code: ptr("model_not_found"),
	}}}
}

// Owns reports whether path is the endpoint's: the front door answers its
// refusals (429, 413, 404) in OpenAI's shape there.
func Owns(path string) bool { return strings.HasPrefix(path, Prefix) }

// FromErr turns any error into OpenAI's shape: a platform error keeps its
// status and text (httperr.Body, which logs and hides internal causes),
// with OpenAI's type and code for that status.
func FromErr(r *http.Request, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		return oe
	}
	body := httperr.Body(r.Context(), err)
	d := ErrorDetail{Message: body.Detail, Type: "invalid_request_error"}
	switch status := body.StatusCode; {
	case status == http.StatusBadRequest:
		d.Code = ptr("invalid_value")
		if ae, ok := apperr.As(err); ok {
			d.Param = ptr(ae.Field)
		}
	case status == http.StatusUnauthorized:
		d.Code = ptr("invalid_api_key")
	case status == http.StatusForbidden:
		d.Type, d.Code = "permission_error", ptr("insufficient_permissions")
	case status == http.StatusNotFound:
		d.Code = ptr("not_found")
	case status == http.StatusConflict:
		d.Code = ptr("conflict")
	case status == http.StatusRequestEntityTooLarge:
		d.Code = ptr("payload_too_large")
	case status == http.StatusTooManyRequests:
		d.Type, d.Code = "requests", ptr("rate_limit_exceeded")
		if body.ErrorType == string(apperr.QuotaExceeded) || body.ErrorType == "BudgetExceededError" {
			d.Type, d.Code = "insufficient_quota", ptr("insufficient_quota")
		}
	case status >= 500:
		d.Type = "server_error"
	}
	return &Error{Status: body.StatusCode, Body: ErrorBody{Error: d}}
}

// WriteError answers err in OpenAI's shape.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := FromErr(r, err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.Status == http.StatusTooManyRequests {
		h.Set("Retry-After", "60")
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.Body)
}

// FromActivate words an error of creating the activation as the request's:
// input_data.messages[1].role is the request's messages[1].role, and
// input_data.tools[1].name its tools[1].function.name (ChatRequest.Activation
// keeps the tools' order).
func FromActivate(err error) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Kind != apperr.Validation || !strings.HasPrefix(ae.Field, "input_data.") {
		return err
	}
	field := strings.TrimPrefix(ae.Field, "input_data.")
	if m := runtimeToolField.FindStringSubmatch(field); m != nil {
		field = m[1] + ".function." + m[2]
	}
	return apperr.Invalid(field, strings.ReplaceAll(ae.Detail, ae.Field, field))
}

// runtimeToolField is a field of one of input_data.tools, which is the
// request's tools[i].function.
var runtimeToolField = regexp.MustCompile(`^(tools\[\d+\])\.(name|description|parameters)$`)
