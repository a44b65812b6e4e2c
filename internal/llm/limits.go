package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// answer follows one call's HTTP answer: the SDK middleware (middleware)
// reads its body through a cap and notes what came back, so that a failed
// call can be told apart: too large, not a completion, or a failure on the
// way. It sits around whatever http.Client the provider uses (an egress
// guard included), per call, so streaming and plain calls get their own
// rule.
type answer struct {
	stream      bool
	status      int
	contentType string
	body        *cappedBody
}

// middleware is an option.Middleware of both SDKs (their types are
// aliases of this one).
func (a *answer) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	a.status, a.contentType = res.StatusCode, res.Header.Get("Content-Type")
	// A stream is unbounded in length (the run's timeout bounds it) but each
	// of its events is bounded: the SDKs' decoders hold one event at a time.
	// Anything else (a JSON answer, an error, an HTML page answering a
	// stream request) is read whole by the SDK, so it is bounded whole.
	perEvent := a.stream && res.StatusCode < 300 && mediaType(a.contentType) == "text/event-stream"
	a.body = &cappedBody{rc: res.Body, perEvent: perEvent}
	res.Body = a.body
	return res, nil
}

// tooLarge is the error of an answer over MaxResponseBytes.
func tooLarge(provider string) *Error {
	return &Error{Provider: provider, Message: ErrResponseTooLarge.Error(), Err: ErrResponseTooLarge}
}

// notCompletion is the error of a successful answer that is not a
// completion: a base_url that points at a web page, a login proxy, another
// API. The same answer would come again: not transient.
func (a *answer) notCompletion(provider string) *Error {
	what := mediaType(a.contentType)
	if what == "" {
		what = "no Content-Type"
	}
	if a.body != nil && a.body.total == 0 {
		what += ", empty body"
	}
	return &Error{Provider: provider, Status: a.status, Message: "the answer is not a completion (" + what + ")"}
}

// fail turns an SDK error into an *Error. started tells, for a stream,
// whether a completion began; a plain call passes false.
func (a *answer) fail(ctx context.Context, provider string, started bool, err error) *Error {
	if errors.Is(err, ErrResponseTooLarge) {
		return tooLarge(provider)
	}
	if ctx.Err() == nil && !started && a.decodeFailure() && !providerError(err) {
		return a.notCompletion(provider)
	}
	return classify(ctx, provider, err)
}

// decodeFailure reports whether a 2xx answer arrived and was read without a
// transport error: the SDK's failure then is that it could not make sense
// of the answer.
func (a *answer) decodeFailure() bool {
	return a.status >= 200 && a.status < 300 && a.body != nil && a.body.err == nil
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt
}

// cappedBody reads a response body up to MaxResponseBytes: in total, or
// per event of a Server-Sent Events stream (bytes since the last blank
// line). Past the cap, reads fail with ErrResponseTooLarge.
type cappedBody struct {
	rc       io.ReadCloser
	perEvent bool
	n        int   // bytes counted against the cap
	total    int   // bytes read in all
	line     int   // for perEvent: bytes of the current line, CR excluded
	err      error // the first read error other than io.EOF
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if errors.Is(b.err, ErrResponseTooLarge) {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.total += n
	if b.perEvent {
		b.countEvents(p[:n])
	} else {
		b.n += n
	}
	if b.n > MaxResponseBytes {
		b.err = ErrResponseTooLarge
		return 0, b.err
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// countEvents counts p against the current event, which a blank line ends.
func (b *cappedBody) countEvents(p []byte) {
	n, line := b.n, b.line
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			i = len(p)
		}
		seg := i - bytes.Count(p[:i], []byte{'\r'})
		n, line = n+seg, line+seg
		if i < len(p) { // a line ends
			if line == 0 {
				n = 0 // a blank line ends the event
			}
			line = 0
			i++
		}
		p = p[i:]
		if n > MaxResponseBytes {
			break
		}
	}
	b.n, b.line = n, line
}

func (b *cappedBody) Close() error { return b.rc.Close() }
