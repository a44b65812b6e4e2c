//go:build !unix

package store

import "os"

// lockFile does not lock where flock is missing: running two processes on
// one SQLite file there is the operator's mistake to avoid.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
