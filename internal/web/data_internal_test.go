package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apps"
)

// TestCellOf: each field type's stored value as the table shows it.
func TestCellOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", cellRunes+5)
	for _, c := range []struct {
		typ, raw string
		want     cell
	}{
		{"string", `"hello"`, cell{Text: "hello"}},
		{"string", `null`, cell{Empty: true}},
		{"string", ``, cell{Empty: true}},
		{"text", `"` + long + `"`, cell{Text: long[:2*cellRunes] + "…", Full: long}},
		{"enum", `"high"`, cell{Text: "high"}},
		{"integer", `2`, cell{Text: "2"}},
		{"number", `0.25`, cell{Text: "0.25"}},
		{"boolean", `false`, cell{Text: "false"}},
		{"json", `{"a": [1, 2]}`, cell{Text: `{"a":[1,2]}`, Code: true}},
		{"datetime", `"2026-12-01T09:30:00Z"`, cell{Time: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)}},
		{"datetime", `"soon"`, cell{Text: "soon"}},
		// Stored before the model changed the field's type: as stored.
		{"string", `42`, cell{Text: "42", Code: true}},
	} {
		got := cellOf(apps.Field{Name: "f", Type: c.typ}, json.RawMessage(c.raw))
		c.want.Label = "f"
		require.Equal(t, c.want, got, "%s %s", c.typ, c.raw)
	}
}

// TestExplorerURL: a view's URL reads back as the same view.
func TestExplorerURL(t *testing.T) {
	t.Parallel()
	q := explorerQuery{Model: "tickets", Sort: "-subject", Limit: 10, Offset: 20}
	q.setFilter("priority", "high & low")
	q.setFilter("customer_email", "a+b@example.com")
	u, err := url.Parse(q.url("app-1"))
	require.NoError(t, err)
	require.Equal(t, "/apps/app-1/data", u.Path)
	back, bad := parseExplorer(u.Query())
	require.Nil(t, bad)
	require.Equal(t, q, back)
	require.Equal(t, "/apps/app-1/data?model=tickets", explorerQuery{Model: "tickets", Limit: defaultPageSize}.url("app-1"),
		"the defaults need no parameter")
}
