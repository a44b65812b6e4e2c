// Package inputschema compiles and applies the JSON Schemas that users give
// the platform (a function's input_schema), bounded so that a schema can
// neither pin a core nor outlive the run that uses it (DESIGN §4 Abuse and
// limits).
//
// At compile a schema is refused, naming the problem, when its text is over
// MaxBytes, when it nests deeper than MaxDepth, or when its expansion is over
// MaxExpansion: the number of subschemas validation may visit for one input
// value, counting a subschema once for every path of $ref, allOf, anyOf,
// oneOf… that reaches it. Shared $defs make that number exponential in
// the text (22 levels of allOf pairs of $ref are 1.6 KB and 4 million
// subschemas), which size and depth do not catch.
//
// A recursive $ref (a tree of nodes) is counted once, since the input's
// own nesting bounds how often it applies; so validation also runs under a
// context: every subschema checks it, and a cancelled or timed-out context
// stops the validation at the next subschema.
package inputschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of a schema (DESIGN: size 64 KiB, depth 32).
const (
	MaxBytes     = 64 << 10
	MaxDepth     = 32
	MaxExpansion = 20_000
)

// resourceURL names the schema in the compiler. It is absolute, so that
// the library never resolves it against the working directory, and error
// texts show it as "input_schema".
const resourceURL = "urn:input_schema"

// ErrInterrupted is what Validate returns when its context ended first.
var ErrInterrupted = errors.New("input_schema validation interrupted")

// Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	// pool holds compiled copies, each with its own guard: a copy is used
	// by one validation at a time, so its guard sees that one's context.
	pool sync.Pool
}

// compiled is one compiled schema whose every subschema checks stop.
type compiled struct {
	root *jsonschema.Schema
	stop atomic.Pointer[atomic.Bool]
}

// Compile checks raw's bounds and compiles it; an empty raw is
// {"type":"object"}. The error text names the problem and never a file.
func Compile(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("the schema is %d bytes; the limit is %d (64 KiB)", len(raw), MaxBytes)
	}
	if d := depth(raw); d > MaxDepth {
		return nil, fmt.Errorf("the schema nests %d levels deep; the limit is %d", d, MaxDepth)
	}
	c, err := compileCopy(raw)
	if err != nil {
		return nil, err
	}
	if n := expansion(c.root); n > MaxExpansion {
		return nil, fmt.Errorf("the schema expands to more than %d subschemas through $ref, allOf, anyOf and oneOf (the limit)", MaxExpansion)
	}
	s := &Schema{}
	s.pool.New = func() any {
		c, err := compileCopy(raw)
		if err != nil { // it compiled once: it compiles again
			panic(err)
		}
		return c
	}
	s.pool.Put(c)
	return s, nil
}

// Check is Compile without keeping the result: the manifest's check.
func Check(raw json.RawMessage) error {
	_, err := Compile(raw)
	return err
}

func compileCopy(raw json.RawMessage) (*compiled, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, errors.New("not JSON")
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	comp.AssertFormat()
	if err := comp.AddResource(resourceURL, doc); err != nil {
		return nil, errors.New(clean(err.Error()))
	}
	root, err := comp.Compile(resourceURL)
	if err != nil {
		return nil, errors.New(clean(err.Error()))
	}
	c := &compiled{root: root}
	guard(root, &c.stop)
	return c, nil
}

// clean words the library's texts without its resource URL.
func clean(s string) string {
	s = strings.ReplaceAll(s, resourceURL+"#", "input_schema#")
	return strings.ReplaceAll(s, resourceURL, "input_schema")
}

// noLoader refuses every $ref to another document: a schema must not make
// the platform fetch a URL (or read a file).
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref to %s: schemas cannot load other documents", url)
}

// interrupted is the panic that unwinds a validation whose context ended;
// Validate recovers it. The library keeps no state across a validation, so
// unwinding leaves the compiled schema as it was.
type interrupted struct{}

// guard makes every subschema of root check stop first. The hook is the
// format check: the library runs it on every subschema before any of its
// applicators (only a type, const or enum mismatch, which ends that
// subschema at once, comes earlier).
func guard(root *jsonschema.Schema, stop *atomic.Pointer[atomic.Bool]) {
	check := func() {
		if f := stop.Load(); f != nil && f.Load() {
			panic(interrupted{})
		}
	}
	walk(root, func(s *jsonschema.Schema) {
		orig := s.Format
		if orig == nil {
			s.Format = &jsonschema.Format{Name: "input", Validate: func(any) error { check(); return nil }}
			return
		}
		s.Format = &jsonschema.Format{Name: orig.Name, Validate: func(v any) error { check(); return orig.Validate(v) }}
	})
}

// Validate checks the JSON value v (from jsonschema.UnmarshalJSON) against
// the schema until ctx ends; then it returns ErrInterrupted. A failure is a
// *jsonschema.ValidationError.
func (s *Schema) Validate(ctx context.Context, v any) (err error) {
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	c := s.pool.Get().(*compiled)
	flag := new(atomic.Bool)
	c.stop.Store(flag)
	stop := context.AfterFunc(ctx, func() { flag.Store(true) })
	defer func() {
		stop()
		c.stop.Store(nil)
		if r := recover(); r != nil {
			if _, ok := r.(interrupted); !ok {
				panic(r)
			}
			err = ErrInterrupted
		}
		s.pool.Put(c)
	}()
	return c.root.Validate(v)
}

// children calls fn on every direct subschema of s.
func children(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	one := func(c *jsonschema.Schema) {
		if c != nil {
			fn(c)
		}
	}
	anyOne := func(v any) {
		switch c := v.(type) {
		case *jsonschema.Schema:
			one(c)
		case []*jsonschema.Schema:
			for _, x := range c {
				one(x)
			}
		}
	}
	one(s.Ref)
	one(s.RecursiveRef)
	if s.DynamicRef != nil {
		one(s.DynamicRef.Ref)
	}
	one(s.Not)
	for _, l := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, c := range l {
			one(c)
		}
	}
	one(s.If)
	one(s.Then)
	one(s.Else)
	one(s.PropertyNames)
	for _, c := range s.Properties {
		one(c)
	}
	for _, c := range s.PatternProperties {
		one(c)
	}
	anyOne(s.AdditionalProperties)
	for _, d := range s.Dependencies {
		anyOne(d)
	}
	for _, c := range s.DependentSchemas {
		one(c)
	}
	one(s.UnevaluatedProperties)
	one(s.Contains)
	anyOne(s.Items)
	anyOne(s.AdditionalItems)
	one(s.Items2020)
	one(s.UnevaluatedItems)
	one(s.ContentSchema)
}

// walk calls fn once on every subschema reachable from root.
func walk(root *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	seen := map[*jsonschema.Schema]bool{}
	var visit func(*jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		if seen[s] {
			return
		}
		seen[s] = true
		fn(s)
		children(s, visit)
	}
	visit(root)
}

// expansion is how many subschemas the tree unfolded from root holds:
// each subschema counted once per path that reaches it, a $ref back to a
// subschema being unfolded counted as one. It stops counting past
// MaxExpansion.
func expansion(root *jsonschema.Schema) int {
	memo := map[*jsonschema.Schema]int{}
	onPath := map[*jsonschema.Schema]bool{}
	var count func(*jsonschema.Schema) int
	count = func(s *jsonschema.Schema) int {
		if n, ok := memo[s]; ok {
			return n
		}
		if onPath[s] {
			return 1
		}
		onPath[s] = true
		n := 1
		children(s, func(c *jsonschema.Schema) {
			if n <= MaxExpansion {
				n += count(c)
			}
		})
		onPath[s] = false
		n = min(n, MaxExpansion+1)
		memo[s] = n
		return n
	}
	return count(root)
}

// depth is how deeply raw's arrays and objects nest, read without
// building the value.
func depth(raw []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, b := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			d++
			deepest = max(deepest, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return deepest
}
