package web

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTemplatesParseOnFirstUse: New parses no template (an API-only
// server never renders a page, and the parse trees were a megabyte of its
// idle heap); each page parses on its first render, once. Every embedded
// template parses: what New used to check at start is checked here, at
// build time, since the templates are compiled into the binary.
func TestTemplatesParseOnFirstUse(t *testing.T) {
	t.Parallel()
	p, err := New(Deps{})
	require.NoError(t, err)
	require.NotEmpty(t, p.pages)
	for name, pg := range p.pages {
		require.False(t, pg.parsed(), "%s parsed at start", name)
	}
	for name, pg := range p.pages {
		tmpl, err := pg.template()
		require.NoError(t, err, name)
		require.NotNil(t, tmpl.Lookup("layout.html"), name)
		again, err := pg.template()
		require.NoError(t, err, name)
		require.Same(t, tmpl, again, "%s is parsed once", name)
	}
}
