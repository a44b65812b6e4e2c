package apps

import (
	"regexp"
	"strconv"
	"strings"
)

// semverPattern is Semantic Versioning 2.0.0's grammar.
var semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$`)

func validSemver(v string) bool { return semverPattern.MatchString(v) }

// compareSemver orders two valid versions by SemVer precedence (build
// metadata ignored): -1, 0 or +1. An invalid version sorts first.
func compareSemver(a, b string) int {
	pa, pb := semverPattern.FindStringSubmatch(a), semverPattern.FindStringSubmatch(b)
	switch {
	case pa == nil && pb == nil:
		return 0
	case pa == nil:
		return -1
	case pb == nil:
		return 1
	}
	for i := 1; i <= 3; i++ {
		if c := compareNumeric(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	// A pre-release sorts before its release.
	switch {
	case pa[4] == pb[4]:
		return 0
	case pa[4] == "":
		return 1
	case pb[4] == "":
		return -1
	}
	ia, ib := strings.Split(pa[4], "."), strings.Split(pb[4], ".")
	for i := 0; i < len(ia) && i < len(ib); i++ {
		na, errA := strconv.ParseUint(ia[i], 10, 64)
		nb, errB := strconv.ParseUint(ib[i], 10, 64)
		switch {
		case errA == nil && errB == nil:
			if na != nb {
				return cmpInt(na < nb)
			}
		case errA == nil: // numeric identifiers sort before alphanumeric ones
			return -1
		case errB == nil:
			return 1
		case ia[i] != ib[i]:
			return cmpInt(ia[i] < ib[i])
		}
	}
	return compareNumeric(strconv.Itoa(len(ia)), strconv.Itoa(len(ib)))
}

// compareNumeric compares decimal strings without leading zeros of any
// length (no overflow).
func compareNumeric(a, b string) int {
	if len(a) != len(b) {
		return cmpInt(len(a) < len(b))
	}
	return strings.Compare(a, b)
}

func cmpInt(less bool) int {
	if less {
		return -1
	}
	return 1
}
