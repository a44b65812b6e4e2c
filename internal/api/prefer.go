package api

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
)

// preferWait reads the wait preference of a Prefer header (RFC 7240:
// comma-separated preferences, each token[=value] with ;-parameters, names
// case-insensitive, values a token or a quoted string). applied is the
// Preference-Applied value, "" when the header asks for no wait. A wait
// over activation.MaxWait is taken as MaxWait, as a preference may be
// honoured in part; one that is not whole seconds is a 400 naming the
// header.
func preferWait(header string) (wait time.Duration, applied string, err error) {
	if header == "" {
		return 0, "", nil
	}
	for _, pref := range strings.Split(header, ",") {
		nameValue, _, _ := strings.Cut(pref, ";")
		name, value, hasValue := strings.Cut(nameValue, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "wait") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		if !hasValue || value == "" || strings.Trim(value, "0123456789") != "" {
			return 0, "", apperr.Invalid("Prefer", "Invalid value for header Prefer: wait takes whole seconds, e.g. wait=10 (at most 60)")
		}
		limit := int(activation.MaxWait / time.Second)
		n, err := strconv.Atoi(value)
		if err != nil || n > limit {
			n = limit // only digits: too large to parse is over the limit too
		}
		return time.Duration(n) * time.Second, "wait=" + strconv.Itoa(n), nil
	}
	return 0, "", nil
}
