// Package apperr is the platform's one error type. Domain packages return
// these errors with a kind and a public detail text; the API layer alone turns
// a kind into an HTTP status and the {detail, status_code, error_type} body.
// Anything that is not an *Error is an internal failure whose text is never
// shown to a client.
package apperr

import (
	"errors"
	"fmt"
)

// Kind names a class of failure. Its value is the public error_type.
type Kind string

// The kinds of the contract (DESIGN §4 Errors and the credential errors).
const (
	Validation          Kind = "ValidationError"
	Authentication      Kind = "AuthenticationError"
	Permission          Kind = "PermissionError"
	NotFound            Kind = "NotFoundError"
	Conflict            Kind = "ConflictError"
	RateLimit           Kind = "RateLimitError"
	PayloadTooLarge     Kind = "PayloadTooLargeError"
	QuotaExceeded       Kind = "QuotaExceededError"
	Internal            Kind = "InternalError"
	CredentialNotFound  Kind = "CredentialNotFoundError"
	TokenExpired        Kind = "TokenExpiredError"
	InvalidScope        Kind = "InvalidScopeError"
	AuthFailed          Kind = "AuthenticationFailedError"
	ProviderUnsupported Kind = "ProviderNotSupportedError"
	BudgetExceeded      Kind = "BudgetExceededError" // 429 while a budget is spent; the detail names it
)

// Error is a failure with a kind and a detail text that is safe to show.
type Error struct {
	Kind   Kind
	Detail string
	// Field is the request field at fault, for validation errors.
	Field string
	// Err is the underlying cause, kept for logs and errors.Is, never shown.
	Err error
	// TooLarge makes a QuotaExceeded error a 413 (a quota of bytes)
	// instead of a 409 (a quota of things).
	TooLarge bool
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Detail, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with a public detail text.
func New(k Kind, detail string) *Error { return &Error{Kind: k, Detail: detail} }

// Newf is New with a format.
func Newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Invalid is a validation error naming the field at fault.
func Invalid(field, detail string) *Error {
	return &Error{Kind: Validation, Field: field, Detail: detail}
}

// NotFoundf is a not-found error, e.g. NotFoundf("Agent not found").
func NotFoundf(format string, args ...any) *Error { return Newf(NotFound, format, args...) }

// Forbidden is the contract's 403 text.
func Forbidden() *Error {
	return New(Permission, "Insufficient permissions for this operation")
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Is reports whether err carries an *Error of kind k.
func Is(err error, k Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == k
}
