package apps

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Placeholder is a step input's {{input.x}} or {{steps.ID.output.y}}: a
// dotted path, spaces allowed around it. Rendering (package pipeline) and
// the checks below read templates with this one expression.
var Placeholder = regexp.MustCompile(`\{\{\s*([^{}\s]+)\s*\}\}`)

// templatePaths lists the placeholders' paths in a template.
func templatePaths(tmpl json.RawMessage) []string {
	var out []string
	for _, m := range Placeholder.FindAllSubmatch(tmpl, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// CheckReferences refuses a template that names something no run can
// have: a root other than input and steps, an unknown step, or a step
// that does not come before (earlier are the ids in before).
func CheckReferences(tmpl json.RawMessage, before map[string]bool) error {
	for _, path := range templatePaths(tmpl) {
		parts := strings.Split(path, ".")
		switch {
		case parts[0] == "input":
		case parts[0] == "steps" && len(parts) >= 3 && parts[2] == "output":
			if !before[parts[1]] {
				return fmt.Errorf("{{%s}} names step %q, which does not run before this one", path, parts[1])
			}
		default:
			return fmt.Errorf("{{%s}}: a placeholder is {{input.…}} or {{steps.ID.output.…}}", path)
		}
	}
	return nil
}
