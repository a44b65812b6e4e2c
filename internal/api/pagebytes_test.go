package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// walk reads a list page by page, advancing offset by the items each page
// holds, and returns the ids and the items per page.
func (e *env) walk(token, path, field, idField string) (ids []string, sizes []int) {
	e.t.Helper()
	seen := map[string]bool{}
	for offset := 0; ; {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := e.do("GET", path+sep+"limit=30&offset="+itoa(int64(offset)), nil, bearer(token)).expect(e.t, 200)
		items := r.JSON[field].([]any)
		require.NotEmpty(e.t, items, "a page holds at least one item: %s", r.Body)
		for _, it := range items {
			id, _ := it.(map[string]any)[idField].(string)
			require.NotEmpty(e.t, id)
			require.False(e.t, seen[id], "item %s twice", id)
			seen[id] = true
			ids = append(ids, id)
		}
		sizes = append(sizes, len(items))
		offset += len(items)
		require.Equal(e.t, offset < int(r.JSON["total_count"].(float64)), r.JSON["has_more"], "body: %s", r.Body)
		if r.JSON["has_more"] != true {
			return ids, sizes
		}
	}
}

// TestListPagesAreBoundedInBytes: a page of large items holds fewer than
// its limit (AP_LIST_PAGE_BYTES, here 8 KiB), with has_more and the same
// total, and walking by offset += len(items) reads every item once.
func TestListPagesAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_LIST_PAGE_BYTES": "8192"})
		token := e.signup("u@example.com")
		big := strings.Repeat("x", 3000)

		// Activations: the input (and the echo's output) are large.
		f := e.llmAgent(token, nil, 0)
		for range 5 {
			e.await(token, e.activate(token, f, map[string]any{"message": big}))
		}
		e.activate(token, f, map[string]any{"message": "small"})
		ids, sizes := e.walk(token, "/api/v1/activations", "activations", "activation_id")
		require.Len(t, ids, 6)
		require.Greater(t, len(sizes), 2, "pages of large activations hold fewer than the limit: %v", sizes)

		// Records.
		appID := e.newApp(token, "notes")
		e.do("POST", "/api/v1/data/"+appID+"/models", map[string]any{"slug": "note", "name": "Note", "fields": []any{
			map[string]any{"name": "text", "type": "text", "required": true}}}, bearer(token)).expect(t, 201)
		for range 6 {
			e.do("POST", "/api/v1/data/"+appID+"/note", map[string]any{"data": map[string]any{"text": big}}, bearer(token)).expect(t, 201)
		}
		ids, sizes = e.walk(token, "/api/v1/data/"+appID+"/note", "items", "item_id")
		require.Len(t, ids, 6)
		require.Greater(t, len(sizes), 2, "pages of large records hold fewer than the limit: %v", sizes)
		ids, sizes = e.walk(token, "/api/v1/data/"+appID+"/note?sort=-text", "items", "item_id")
		require.Len(t, ids, 6)
		require.Greater(t, len(sizes), 2, "sorted too: %v", sizes)
	})
}
