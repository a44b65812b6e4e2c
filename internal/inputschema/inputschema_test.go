package inputschema_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/inputschema"
)

// AllOfBomb is levels of $defs, each an allOf pair of $ref to the next:
// 1.6 KB for 22 levels, 2^22 subschemas to visit per input value.
func AllOfBomb(levels int) json.RawMessage {
	defs := map[string]any{fmt.Sprintf("d%d", levels): map[string]any{"type": "object"}}
	for i := 0; i < levels; i++ {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{next, next}}
	}
	b, _ := json.Marshal(map[string]any{"$defs": defs, "$ref": "#/$defs/d0"})
	return b
}

// DeepProperties nests properties n levels deep.
func DeepProperties(n int) json.RawMessage {
	s := `{"type":"object"}`
	for i := 0; i < n; i++ {
		s = `{"type":"object","properties":{"a":` + s + `}}`
	}
	return json.RawMessage(s)
}

// RecursivePairs is a schema within every bound whose cost doubles with
// each level of the input's nesting: both halves of an allOf apply the
// whole schema again to property a.
const RecursivePairs = `{"allOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`

// NestedInput is {"a":{"a":…}} n levels deep.
func NestedInput(n int) string {
	return strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n)
}

// TestCompileRefusesBombs: size, depth and expansion are refused at
// compile, fast, naming the problem.
func TestCompileRefusesBombs(t *testing.T) {
	t.Parallel()
	big := json.RawMessage(`{"description":"` + strings.Repeat("x", 70<<10) + `"}`)
	for name, tc := range map[string]struct {
		schema json.RawMessage
		want   string
	}{
		"size":      {big, "the limit is 65536 (64 KiB)"},
		"depth":     {DeepProperties(1500), "nests 3001 levels deep; the limit is 32"},
		"expansion": {AllOfBomb(22), "expands to more than 20000 subschemas"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := inputschema.Compile(tc.schema)
			require.ErrorContains(t, err, tc.want)
			require.Less(t, time.Since(start), time.Second)
		})
	}
	require.Less(t, len(AllOfBomb(22)), 2000, "the bomb is small")
	_, err := inputschema.Compile(AllOfBomb(10))
	require.NoError(t, err, "1,024 subschemas are fine")
	_, err = inputschema.Compile(DeepProperties(15))
	require.NoError(t, err)
	_, err = inputschema.Compile(json.RawMessage(RecursivePairs))
	require.NoError(t, err)
}

// TestValidateStopsWhenTheContextEnds: a costly validation stops at the
// context's deadline and at its cancellation.
func TestValidateStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	s, err := inputschema.Compile(json.RawMessage(RecursivePairs))
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(NestedInput(40)))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, s.Validate(ctx, inst), inputschema.ErrInterrupted)
	require.Less(t, time.Since(start), time.Second)

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	require.ErrorIs(t, s.Validate(ctx, inst), inputschema.ErrInterrupted)
	require.Less(t, time.Since(start), time.Second)

	// The schema is whole afterwards.
	small, err := jsonschema.UnmarshalJSON(strings.NewReader(NestedInput(3)))
	require.NoError(t, err)
	require.NoError(t, s.Validate(context.Background(), small))
}

// TestErrorsNameNoFile: compile and validation errors never show the
// server's working directory.
func TestErrorsNameNoFile(t *testing.T) {
	t.Parallel()
	wd, _ := os.Getwd()
	_, err := inputschema.Compile(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "file://")
	require.NotContains(t, err.Error(), wd)
	require.Contains(t, err.Error(), "input_schema")

	s, err := inputschema.Compile(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	require.NoError(t, err)
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"n":"x"}`))
	err = s.Validate(context.Background(), inst)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "file://")
	require.NotContains(t, err.Error(), wd)
}
