// Package cleantext keeps text the databases cannot store out of them.
// PostgreSQL refuses U+0000 in text and in jsonb (also as the escape
// \u0000), invalid UTF-8, and jsonb refuses escapes of unpaired UTF-16
// surrogates; SQLite would store them, so both dialects are held to the
// stricter rule and behave alike. Input with such text is refused (Find*
// name where it is); output of agents is stored with U+FFFD in place of
// each offending character (String, JSON).
//
// The checks are byte scans meant for every request and every result: the
// slower search for the offending field runs only once a scan has found
// something.
package cleantext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is what is wrong with a string.
type Problem int

// The problems.
const (
	None Problem = iota
	NUL
	InvalidUTF8
)

// Describe words a problem for a field's error message.
func (p Problem) Describe() string {
	if p == NUL {
		return "must not contain the NUL character (U+0000)"
	}
	return "must be valid UTF-8 text"
}

// Check reports what is wrong with s, if anything.
func Check(s string) Problem {
	if strings.IndexByte(s, 0) >= 0 {
		return NUL
	}
	if !utf8.ValidString(s) {
		return InvalidUTF8
	}
	return None
}

// String returns s with each NUL and each invalid UTF-8 sequence replaced
// by U+FFFD; s itself when it is clean.
func String(s string) string {
	if Check(s) == None {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// CleanJSON reports whether a JSON document is free of NUL (raw or
// escaped), invalid UTF-8 and escapes of unpaired surrogates.
func CleanJSON(doc []byte) bool {
	return bytes.IndexByte(doc, 0) < 0 && utf8.Valid(doc) && nextBadEscape(doc, 0) < 0
}

// JSON returns doc with each \u0000 escape and each escape of an unpaired
// surrogate replaced by \ufffd, and raw NUL bytes and invalid UTF-8 by
// U+FFFD; doc itself when it is clean. Nothing else changes: the document
// is stored as it was returned.
func JSON(doc []byte) []byte {
	if CleanJSON(doc) {
		return doc
	}
	doc = bytes.ReplaceAll(bytes.ToValidUTF8(doc, []byte("\uFFFD")), []byte{0}, []byte("\uFFFD"))
	var out []byte
	from := 0
	for i := nextBadEscape(doc, 0); i >= 0; i = nextBadEscape(doc, i+6) {
		out = append(append(out, doc[from:i]...), `\ufffd`...)
		from = i + 6
	}
	return append(out, doc[from:]...)
}

// nextBadEscape returns the offset of the first \u escape at or after from
// that is \u0000 or an unpaired surrogate, or -1. Outside strings valid JSON
// has no backslash, and escapes are consumed whole, so scanning a whole
// document from escape to escape never mistakes an escaped backslash
// followed by "u0000" for an escape.
func nextBadEscape(doc []byte, from int) int {
	i := from
	for {
		j := bytes.IndexByte(doc[i:], '\\')
		if j < 0 {
			return -1
		}
		j += i
		if j+1 >= len(doc) {
			return -1
		}
		if doc[j+1] != 'u' {
			i = j + 2
			continue
		}
		cp, ok := hex4(doc[j+2:])
		if !ok {
			i = j + 2
			continue
		}
		switch {
		case cp == 0:
			return j
		case cp >= 0xD800 && cp < 0xDC00: // high surrogate: a low one must follow
			if len(doc) >= j+12 && doc[j+6] == '\\' && doc[j+7] == 'u' {
				if lo, ok := hex4(doc[j+8:]); ok && lo >= 0xDC00 && lo < 0xE000 {
					i = j + 12
					continue
				}
			}
			return j
		case cp >= 0xDC00 && cp < 0xE000: // a low surrogate alone
			return j
		}
		i = j + 6
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// FindJSON returns the path (e.g. input_data.items[2].name) of the first
// string of doc, key or value, with a problem. ok is false when doc is not
// valid JSON or nothing is wrong.
func FindJSON(doc []byte) (path string, p Problem, ok bool) {
	type frame struct {
		array bool
		index int
		key   string // the current member's key, in an object
		inKey bool   // an object expecting a key
	}
	var stack []frame
	pathOf := func(leaf string) string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		if leaf != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(leaf)
		}
		return b.String()
	}
	// valueDone moves the enclosing container past a finished value.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].inKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", None, false
		}
		end := dec.InputOffset()
		// The raw bytes of the token (with the separators before it): the
		// decoder has already replaced what was invalid in tok.
		raw := doc[prev:end]
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{inKey: true})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			prob := rawProblem(raw)
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].inKey {
				stack[n-1].key, stack[n-1].inKey = t, false
				if prob != None {
					stack[n-1].key = String(t)
					return pathOf(""), prob, true
				}
				continue
			}
			if prob != None {
				return pathOf(""), prob, true
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// rawProblem is what is wrong with the raw JSON text of a token.
func rawProblem(raw []byte) Problem {
	if bytes.IndexByte(raw, 0) >= 0 {
		return NUL
	}
	if i := nextBadEscape(raw, 0); i >= 0 {
		if string(raw[i+2:i+6]) == "0000" {
			return NUL
		}
		return InvalidUTF8
	}
	if !utf8.Valid(raw) {
		return InvalidUTF8
	}
	return None
}

// FindValue returns the path of the first string, map key or value, of a
// decoded document (maps, slices, strings: what JSON and YAML decode to)
// with a problem; ok is false when nothing is wrong. Keys of a map are
// visited in order, so the answer is stable.
func FindValue(v any) (path string, p Problem, ok bool) {
	return findValue(v, "")
}

func findValue(v any, at string) (string, Problem, bool) {
	join := func(key string) string {
		if at == "" {
			return key
		}
		return at + "." + key
	}
	switch t := v.(type) {
	case string:
		if p := Check(t); p != None {
			return at, p, true
		}
	case []any:
		for i, e := range t {
			if path, p, ok := findValue(e, at+"["+strconv.Itoa(i)+"]"); ok {
				return path, p, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p := Check(k); p != None {
				return join(String(k)), p, true
			}
			if path, p, ok := findValue(t[k], join(k)); ok {
				return path, p, true
			}
		}
	case map[any]any: // YAML's mapping with keys that are not all strings
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = e
		}
		return findValue(m, at)
	}
	return "", None, false
}

// ErrorBytes caps an error text where it is recorded (DESIGN: an error text
// is capped like an output, 64 KiB, then Truncated).
const ErrorBytes = 64 << 10

// Truncated marks where a capped text was cut.
const Truncated = "…[truncated]"

// Cap returns s cut to at most n bytes, at a character boundary, with
// Truncated after the cut; s itself when it fits.
func Cap(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Truncated
}

// Error is an error text as it is recorded: capped at ErrorBytes, then
// cleaned as String does. Every place that stores a run's error goes
// through it, whichever executor failed.
func Error(s string) string { return String(Cap(s, ErrorBytes)) }
