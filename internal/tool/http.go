package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplatform/agentplatform/internal/egress"
)

// Bounds of one http tool call (DESIGN).
const (
	HTTPTimeout = 10 * time.Second
	MaxHTTPBody = 1 << 20
	// errorBodyChars is how much of a non-2xx answer's body its error
	// result quotes: enough to say why, not a page of HTML.
	errorBodyChars = 300
)

// httpTool makes one HTTP call through the egress guard.
type httpTool struct {
	base
	kit *Kit
}

// httpResult is an http tool's result.
type httpResult struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func (t *httpTool) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	if t.kit.HTTP == nil {
		return nil, errors.New("http tools are not available here")
	}
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	req, err := t.request(ctx, arguments(c))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", c.IdempotencyKey)
	}
	if t.spec.Connection != "" {
		if t.kit.Credentials == nil {
			return nil, errors.New("connections are not available here")
		}
		token, err := t.kit.Credentials.AccessToken(ctx, c.Run.UserID, c.Run.AppID, t.spec.Connection)
		if err != nil {
			return nil, fmt.Errorf("connection %s: %w", t.spec.Connection, err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := t.kit.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s failed: %s", t.spec.Method, egress.Redact(t.spec.URL), egress.Describe(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s failed reading the answer: %s", t.spec.Method, egress.Redact(t.spec.URL), egress.Describe(err))
	}
	if len(body) > MaxHTTPBody {
		return nil, fmt.Errorf("%s %s answered more than 1 MiB (the limit)", t.spec.Method, egress.Redact(t.spec.URL))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s %s answered HTTP %d: %s", t.spec.Method, egress.Redact(t.spec.URL), resp.StatusCode, excerpt(body))
	}
	return json.Marshal(httpResult{Status: resp.StatusCode, Body: bodyJSON(body)})
}

// request is the call's request: the arguments as query parameters for
// GET and DELETE, else as a JSON body.
func (t *httpTool) request(ctx context.Context, args json.RawMessage) (*http.Request, error) {
	u, err := url.Parse(t.spec.URL)
	if err != nil {
		return nil, fmt.Errorf("bad url: %w", err)
	}
	var body io.Reader
	if t.spec.Method == http.MethodGet || t.spec.Method == http.MethodDelete {
		q, err := query(u.Query(), args)
		if err != nil {
			return nil, err
		}
		u.RawQuery = q.Encode()
	} else {
		body = bytes.NewReader(args)
	}
	req, err := http.NewRequestWithContext(ctx, t.spec.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// query adds args (an object) to q: strings as they are, arrays as one
// parameter per element, null left out, anything else as its JSON text.
func query(q url.Values, args json.RawMessage) (url.Values, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, errors.New("the arguments are not a JSON object")
	}
	for k, v := range m {
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			items = []json.RawMessage{v}
		}
		for _, item := range items {
			if isNull(item) {
				continue
			}
			var s string
			if json.Unmarshal(item, &s) != nil {
				s = string(bytes.TrimSpace(item))
			}
			q.Add(k, s)
		}
	}
	return q, nil
}

// bodyJSON is an answer's body for the result: itself when it is JSON,
// else a JSON string of its text.
func bodyJSON(body []byte) json.RawMessage {
	if len(bytes.TrimSpace(body)) > 0 && json.Valid(body) {
		return body
	}
	s, _ := json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
	return s
}

// excerpt is the start of a body, for an error text.
func excerpt(body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if utf8.RuneCountInString(s) <= errorBodyChars {
		return s
	}
	return string([]rune(s)[:errorBodyChars]) + "…"
}
