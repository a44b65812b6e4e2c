//go:build !race

package store_test

// slowVictimRows: see race_test.go. Without the race detector a join of
// 150 rows ended before the test could see it running.
const slowVictimRows = 1500
