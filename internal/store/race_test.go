//go:build race

package store_test

// slowVictimRows sizes the table TestSharedCommitSurvivesCancelledRegistration
// cross-joins in its victim's trigger: long enough to be caught mid-statement,
// short enough not to slow the suite. The race detector slows SQLite's
// (transpiled) engine about tenfold.
const slowVictimRows = 150
