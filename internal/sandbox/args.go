package sandbox

import (
	"encoding/json"
	"fmt"
)

// Args is a host call's arguments as Call receives them: the JSON array of
// the JS arguments. Every ctx service decodes them the same way; only the
// error it shows the code differs (a TypeError, a ValidationError), so
// decoding is here and the wording of the error is the caller's.
type Args []json.RawMessage

// ArgError is arguments that do not decode.
type ArgError struct {
	// Position is the argument's, from 1; 0 when the arguments are not a
	// JSON array at all (the prelude always sends one, so that is not the
	// code's doing and there is nothing more to say).
	Position int
	Err      error
}

func (e *ArgError) Error() string {
	if e.Position == 0 {
		return "bad arguments"
	}
	return fmt.Sprintf("argument %d: %v", e.Position, e.Err)
}

func (e *ArgError) Unwrap() error { return e.Err }

// ParseArgs splits a call's arguments; the error is an *ArgError.
func ParseArgs(raw json.RawMessage) (Args, error) {
	var a Args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, &ArgError{Err: err}
	}
	return a, nil
}

// Decode decodes argument i (from 0) into dst. An absent or null argument
// leaves dst as it was, as JS's undefined would. The error is an
// *ArgError.
func (a Args) Decode(i int, dst any) error {
	if i >= len(a) || string(a[i]) == "null" {
		return nil
	}
	if err := json.Unmarshal(a[i], dst); err != nil {
		return &ArgError{Position: i + 1, Err: err}
	}
	return nil
}

// DecodeArgs decodes a call's arguments into dst's elements in order.
func DecodeArgs(raw json.RawMessage, dst ...any) error {
	a, err := ParseArgs(raw)
	if err != nil {
		return err
	}
	for i, d := range dst {
		if err := a.Decode(i, d); err != nil {
			return err
		}
	}
	return nil
}
