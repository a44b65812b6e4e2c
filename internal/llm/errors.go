package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentplatform/agentplatform/internal/egress"
)

// providerError reports an error the provider itself sent (an error
// answer, an error event in a stream): it is classified as such, not as an
// answer that is not a completion.
func providerError(err error) bool {
	var oe *openai.Error
	var ae *anthropic.Error
	var se *ssestream.StreamError
	return errors.As(err, &oe) || errors.As(err, &ae) || errors.As(err, &se) ||
		strings.Contains(err.Error(), "received error while streaming") // anthropic's plain stream error
}

// transientStatus reports whether an HTTP answer is worth retrying: rate
// limits, timeouts and the server's own failures (Anthropic's 529
// "overloaded" included).
func transientStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// cancelled is the error of a call whose context ended.
func cancelled(provider string, err error) *Error {
	msg := "request cancelled"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "request timed out"
	}
	// A deadline is a timeout (transient); a cancellation is the caller's
	// decision and retrying it would be wrong.
	return &Error{Provider: provider, Message: msg, Transient: errors.Is(err, context.DeadlineExceeded), Err: err}
}

// classify maps any failure of an SDK call to an *Error. ctx is the call's
// context: when it ended, that is the cause whatever the transport says.
func classify(ctx context.Context, provider string, err error) *Error {
	if err == nil {
		return nil
	}
	var le *Error
	if errors.As(err, &le) {
		return le
	}
	if ctx.Err() != nil {
		return cancelled(provider, ctx.Err())
	}
	// A refused address (a user's base_url on a private network) will be
	// refused again: not worth a retry, and its own words say what to do.
	var refused *egress.Refused
	if errors.As(err, &refused) {
		return &Error{Provider: provider, Message: refused.Error(), Err: err}
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return statusError(provider, oe.StatusCode, oe.Message, oe.RawJSON(), err)
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return statusError(provider, ae.StatusCode, "", ae.RawJSON(), err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return cancelled(provider, err)
	}
	// Anything else failed on the way (refused, reset, DNS, TLS, a body cut
	// short): the server may well answer the next attempt.
	msg := "connection failed: "
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		msg = "timed out: "
	}
	// Without the request's URL: a user's base_url may carry a key in its
	// query, and this message is shown and logged.
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	return &Error{Provider: provider, Message: msg + cause.Error(), Transient: true, Err: err}
}

// statusError is an HTTP error answer; message is the provider's own text
// when the SDK parsed it, else it is read from the raw body.
func statusError(provider string, status int, message, raw string, err error) *Error {
	if message == "" {
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(raw), &body) == nil {
			message = body.Error.Message
			if message == "" {
				message = body.Message
			}
		}
	}
	if message == "" {
		message = http.StatusText(status)
	}
	return &Error{Provider: provider, Status: status, Message: message, Transient: transientStatus(status), Err: err}
}
