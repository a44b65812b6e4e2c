package apps_test

import (
	"encoding/json"
	"testing"

	"github.com/agentplatform/agentplatform/internal/apps"
)

func TestCheckReferences(t *testing.T) {
	t.Parallel()
	before := map[string]bool{"a": true}
	for tmpl, ok := range map[string]bool{
		`{"x":"{{input.x}}","y":"{{steps.a.output.y}}","z":"{{steps.a.output}}"}`: true,
		`{"x":"{{steps.b.output.y}}"}`:                                            false,
		`{"x":"{{steps.a.y}}"}`:                                                   false,
		`{"x":"{{steps.a}}"}`:                                                     false,
		`{"x":"{{env.HOME}}"}`:                                                    false,
		`{"x":"{{ input }}"}`:                                                     true,
	} {
		if err := apps.CheckReferences(json.RawMessage(tmpl), before); (err == nil) != ok {
			t.Errorf("%s: %v", tmpl, err)
		}
	}
}
