package router

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/limits"
)

// cleanInput refuses, with 400 naming the field, a request that carries
// U+0000 or invalid UTF-8 in any string: path, query, header or body (form,
// JSON with its \u0000 escapes, YAML). PostgreSQL cannot store either, and
// no client needs them; checking here, once, keeps every handler and both
// databases answering alike. The common case costs a byte scan of what the
// request already holds; the field is looked for only when the scan finds
// something.
func (rt *Router) cleanInput(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rt.checkInput(r); err != nil {
			rt.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func refuse(field string, p cleantext.Problem) error {
	return apperr.Invalid(field, "Invalid value for field "+field+": "+p.Describe())
}

func (rt *Router) checkInput(r *http.Request) error {
	if cleantext.Check(r.URL.Path) != cleantext.None {
		return rt.pathProblem(r)
	}
	if q := r.URL.RawQuery; q != "" && !cleanQuery(q) {
		if err := formProblem(q); err != nil {
			return err
		}
	}
	for name, values := range r.Header {
		if name == "Cookie" {
			continue // other applications' cookies on the same host are not ours to judge
		}
		for _, v := range values {
			if !utf8.ValidString(v) { // net/http already refuses NUL in headers
				return apperr.Invalid(name, "Invalid value for header "+name+": "+cleantext.InvalidUTF8.Describe())
			}
		}
	}
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	return checkBody(r)
}

// cleanQuery is the fast check of a raw query: with no escape, no NUL and
// valid UTF-8 it is clean as it stands.
func cleanQuery(raw string) bool {
	if strings.IndexByte(raw, '%') < 0 {
		return cleantext.Check(raw) == cleantext.None && !strings.Contains(raw, `\u`)
	}
	// A malformed escape anywhere goes the slow way: handlers still get
	// the pairs that parse.
	s, err := url.QueryUnescape(raw)
	return err == nil && cleantext.Check(s) == cleantext.None && !strings.Contains(s, `\u`)
}

// formProblem names the first key or value of a query or form body with a
// problem. A value is also read as JSON text (context={"chat_id":…} is a
// query parameter), so its \u0000 escapes count. Keys are visited in order
// so the answer is stable.
func formProblem(raw string) error {
	v, err := url.ParseQuery(raw)
	if err != nil && len(v) == 0 {
		return nil // malformed: the handler says so
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p := cleantext.Check(k); p != cleantext.None {
			return refuse(cleantext.String(k), p)
		}
		for _, val := range v[k] {
			if p := cleantext.Check(val); p != cleantext.None {
				return refuse(k, p)
			}
			if !cleantext.CleanJSON([]byte(val)) {
				if _, p, ok := cleantext.FindJSON([]byte(val)); ok {
					return refuse(k, p)
				}
			}
		}
	}
	return nil
}

// pathProblem names the path parameter with a problem, from the pattern of
// the route the path matches; "path" when it is not a parameter.
func (rt *Router) pathProblem(r *http.Request) error {
	segs := strings.Split(r.URL.Path, "/")
	_, pattern := rt.mux.Handler(r)
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	pats := strings.Split(pattern, "/")
	for i, seg := range segs {
		p := cleantext.Check(seg)
		if p == cleantext.None {
			continue
		}
		if i < len(pats) && strings.HasPrefix(pats[i], "{") {
			return refuse(strings.TrimSuffix(strings.Trim(pats[i], "{}"), "..."), p)
		}
		return refuse("path", p)
	}
	return refuse("path", cleantext.Check(r.URL.Path))
}

// checkBody reads the body (limitBody has capped it), puts it back for the
// handler, and checks it by its type. Binary types are left alone.
func checkBody(r *http.Request) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	form := mt == "application/x-www-form-urlencoded"
	yml := mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml"
	jsonish := mt == "" || mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasPrefix(mt, "text/")
	if !form && !yml && !jsonish {
		return nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(0, min(r.ContentLength, limits.BodyBytes+1))))
	_, err := buf.ReadFrom(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return apperr.New(apperr.PayloadTooLarge, httperr.DetailTooLarge)
	}
	if err != nil {
		return err
	}
	body := buf.Bytes()
	switch {
	case form:
		if !cleanQuery(string(body)) {
			return formProblem(string(body))
		}
	case yml:
		// YAML escapes ("\0", "\x00", "\u0000") are only in double-quoted
		// strings: without a backslash there is nothing to decode.
		if cleantext.Check(string(body)) != cleantext.None {
			return refuse("body", cleantext.Check(string(body)))
		}
		if bytes.IndexByte(body, '\\') >= 0 {
			var v any
			if yaml.Unmarshal(body, &v) == nil {
				if path, p, ok := cleantext.FindValue(v); ok {
					return refuse(orBodyField(path), p)
				}
			}
		}
	default:
		if !cleantext.CleanJSON(body) {
			if path, p, ok := cleantext.FindJSON(body); ok {
				return refuse(orBodyField(path), p)
			}
			if p := cleantext.Check(string(body)); p != cleantext.None {
				return refuse("body", p) // not JSON: the body as a whole
			}
		}
	}
	return nil
}

func orBodyField(path string) string {
	if path == "" {
		return "body"
	}
	return path
}
