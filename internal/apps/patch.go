package apps

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Merged is what a PATCH of an app part leaves: cur's fields (the part's
// present values) with those patch names replaced, as the decoded JSON a
// part's decoder validates whole, so a patch is checked as a create is.
func Merged(cur, patch map[string]any) map[string]any {
	for k := range cur {
		if v, ok := patch[k]; ok {
			cur[k] = v
		}
	}
	raw, _ := json.Marshal(cur)
	var merged map[string]any
	_ = json.Unmarshal(raw, &merged)
	return merged
}

// NameTaken turns the store's conflict on saving an app's part named name
// (a function, a pipeline) into the 409 callers see; other errors pass.
func NameTaken(err error, part, name string) error {
	if errors.Is(err, store.ErrConflict) {
		article := "a"
		if strings.ContainsRune("aeiou", rune(part[0])) {
			article = "an"
		}
		return apperr.Newf(apperr.Conflict, "The app already has %s %s named %q", article, part, name)
	}
	return err
}
