package localpath

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIs(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"/", "/keys", "/apps/x/data?model=tickets&filter%5Bsubject%5D=a%20b", "/apps/x#top", "/?next=//evil.example"} {
		require.True(t, Is(ok), ok)
		require.Equal(t, ok, Or(ok, "/"))
	}
	for _, bad := range []string{"", "apps", "//evil.example", "///evil.example", "/\\evil.example", "\\\\evil.example",
		"https://evil.example/", "http:/evil.example", "javascript:alert(1)", "//user@evil.example", "/%2F%2Fevil.example",
		"/%2f/evil.example", "/%5Cevil.example", "/%", "/x\r\nSet-Cookie: a=b", "/\t/evil.example", "/x%0d%0aSet-Cookie:a=b"} {
		require.False(t, Is(bad), bad)
		require.Equal(t, "/", Or(bad, "/"), bad)
	}
}
