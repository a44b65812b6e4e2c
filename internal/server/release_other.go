//go:build !linux

package server

// releaseStartupPages is a Linux madvise; elsewhere the pages stay mapped.
func releaseStartupPages() (int64, error) { return 0, nil }
