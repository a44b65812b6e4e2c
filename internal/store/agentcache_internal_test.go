package store

import (
	"fmt"
	"testing"
)

// A read that began before a change (and saw the row before it) is not
// stored once the change is forgotten, before or after its commit.
func TestAgentCacheRefusesReadsOlderThanAChange(t *testing.T) {
	t.Parallel()
	c := newAgentCache()
	old := &Agent{ID: "a1", Name: "old"}

	gen := c.generation() // a reader begins
	c.forget()            // a change, before its statement
	c.put(gen, old, "active")
	if _, _, ok := c.get("a1"); ok {
		t.Fatal("a read from before the change was stored")
	}

	gen = c.generation() // a reader begins between the statement and its commit
	c.forget()           // the commit
	c.put(gen, old, "active")
	if _, _, ok := c.get("a1"); ok {
		t.Fatal("a read from before the commit was stored")
	}

	c.put(c.generation(), old, "active")
	if got, status, ok := c.get("a1"); !ok || got.Name != "old" || status != "active" {
		t.Fatalf("a read after the change: %v %q %v", got, status, ok)
	}
}

// However many agents are read, the cache holds at most two maps of
// agentCacheMax entries.
func TestAgentCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newAgentCache()
	for i := range 3*agentCacheMax + 7 {
		c.put(c.generation(), &Agent{ID: fmt.Sprint(i)}, "")
	}
	if n := len(c.cur) + len(c.old); n > 2*agentCacheMax {
		t.Fatalf("%d entries", n)
	}
}
