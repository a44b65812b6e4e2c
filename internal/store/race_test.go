//go:build race

package store_test

// slowVictimRows sizes the table TestSharedCommitSurvivesCancelledRegistration
// cross-joins in its victim's trigger: long enough to be caught mid-statement,
// short enough not to slow the suite (the cancel interrupts it). The race
// detector slows SQLite's (transpiled) engine about tenfold; 150 rows were
// too few under a loaded CI run, where the join ended before the test saw
// it running.
const slowVictimRows = 600
