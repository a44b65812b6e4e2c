package inputschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// Cache holds the compiled input schemas of the things that declare one
// (functions, custom agents), each compiled once per version of its
// owner, and checks inputs against them: the one path by which every
// input meets its schema. The zero value is ready to use.
type Cache struct {
	mu sync.Mutex
	m  map[string]cached // by owner id
}

type cached struct {
	updated time.Time
	schema  *Schema
}

// Check validates input (JSON) against schema, the input_schema of owner
// id as last updated at updated, until ctx ends (then ErrInterrupted). A
// mismatch is a 400 naming the deepest failing place of the input under
// field (input.customer_email, input_data.subject); a schema that does not
// compile (saved before a bound tightened) is a 400 naming input_schema.
func (c *Cache) Check(ctx context.Context, id string, updated time.Time, schema, input json.RawMessage, field string) error {
	sch, err := c.schema(id, updated, schema)
	if err != nil {
		return apperr.Invalid("input_schema", "The input_schema does not compile: "+err.Error())
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return apperr.Invalid(field, "Invalid value for field "+field+": not JSON")
	}
	if err := sch.Validate(ctx, inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return mismatch(ve, field)
		}
		if errors.Is(err, ErrInterrupted) {
			return err
		}
		return apperr.Invalid(field, "Invalid value for field "+field+": "+err.Error())
	}
	return nil
}

func (c *Cache) schema(id string, updated time.Time, raw json.RawMessage) (*Schema, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && e.updated.Equal(updated) {
		return e.schema, nil
	}
	sch, err := Compile(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cached{}
	}
	c.m[id] = cached{updated: updated, schema: sch}
	c.mu.Unlock()
	return sch, nil
}

// mismatch names the deepest failing place of the input under field.
func mismatch(ve *jsonschema.ValidationError, field string) error {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	path := field
	for _, p := range ve.InstanceLocation {
		path += "." + p
	}
	msg := ve.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %s", path, strings.TrimSpace(msg)))
}
