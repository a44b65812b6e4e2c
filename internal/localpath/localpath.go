// Package localpath decides whether a place to send a browser back to,
// given by a client (a login's next, an OAuth flow's return_to), is a path
// on this site. Anything else would make the redirect an open redirect: a
// link on this site that lands on someone else's.
package localpath

import (
	"net/url"
	"strings"
)

// Is reports whether s is a path on this origin: it starts with one "/"
// (not "//" or "/\", which browsers read as another host), has no scheme,
// host or user, no backslash and no control character (browsers drop tabs
// and newlines, so "/\t/evil.example" is "//evil.example" to them; CR and
// LF would split a header). The same holds once percent-decoded, for a
// proxy or router that decodes the path before redirecting.
func Is(s string) bool {
	if !plain(s) {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return false
	}
	decoded, err := url.PathUnescape(u.EscapedPath())
	return err == nil && plain(decoded)
}

func plain(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// Or is s when it is a path on this origin (Is), else fallback.
func Or(s, fallback string) string {
	if Is(s) {
		return s
	}
	return fallback
}
