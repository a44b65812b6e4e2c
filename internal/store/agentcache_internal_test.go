package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A read that began before a change (and saw the row before it) is not
// stored once the change is forgotten, before or after its commit.
func TestAgentCacheRefusesReadsOlderThanAChange(t *testing.T) {
	t.Parallel()
	c := newAgentCache(0)
	old := &Agent{ID: "a1", Name: "old"}

	r := c.begin() // a reader begins
	c.forget()     // a change, before its statement
	c.putAgent(r, old, "active")
	if _, _, ok := c.getAgent("a1"); ok {
		t.Fatal("a read from before the change was stored")
	}

	r = c.begin() // a reader begins between the statement and its commit
	c.forget()    // the commit
	c.putAgent(r, old, "active")
	if _, _, ok := c.getAgent("a1"); ok {
		t.Fatal("a read from before the commit was stored")
	}

	c.putAgent(c.begin(), old, "active")
	if got, status, ok := c.getAgent("a1"); !ok || got.Name != "old" || status != "active" {
		t.Fatalf("a read after the change: %v %q %v", got, status, ok)
	}
}

// However many agents are read, the cache holds at most two maps of
// agentCacheMax entries.
func TestAgentCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newAgentCache(0)
	for i := range 3*agentCacheMax + 7 {
		c.putAgent(c.begin(), &Agent{ID: fmt.Sprint(i)}, "")
	}
	if n := len(c.cur) + len(c.old); n > 2*agentCacheMax {
		t.Fatalf("%d entries", n)
	}
}

// Agents with large configurations (a custom agent's code may be a
// megabyte) are held to agentCacheBytes a map, and one too large for the
// cache is read each time instead.
func TestAgentCacheIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	c := newAgentCache(0)
	config := json.RawMessage(`{"code":"` + strings.Repeat("x", 100<<10) + `"}`)
	for i := range 1000 {
		c.putAgent(c.begin(), &Agent{ID: fmt.Sprint(i), Config: config}, "")
	}
	total := 0
	for _, m := range []map[string]agentEntry{c.cur, c.old} {
		for _, e := range m {
			total += e.size()
		}
	}
	if total > 2*agentCacheBytes {
		t.Fatalf("%d bytes held for 1000 agents of 100 KiB", total)
	}
	if _, _, ok := c.getAgent("999"); !ok {
		t.Fatal("the last agent read is not kept")
	}
	huge := json.RawMessage(`{"code":"` + strings.Repeat("x", agentCacheEntryMax) + `"}`)
	c.putAgent(c.begin(), &Agent{ID: "huge", Config: huge}, "")
	if _, _, ok := c.getAgent("huge"); ok {
		t.Fatal("an agent larger than an entry may be was kept")
	}
}

// With a time to live (PostgreSQL: other processes write too), an entry
// is not answered once that long has passed since its read began.
func TestAgentCacheEntriesExpire(t *testing.T) {
	t.Parallel()
	c := newAgentCache(time.Hour)
	c.putAgent(c.begin(), &Agent{ID: "fresh"}, "")
	r := c.begin()
	r.read = r.read.Add(-2 * time.Hour)
	c.putAgent(r, &Agent{ID: "stale"}, "")
	if _, _, ok := c.getAgent("fresh"); !ok {
		t.Fatal("a fresh entry missed")
	}
	if _, _, ok := c.getAgent("stale"); ok {
		t.Fatal("an entry past its time to live answered")
	}
}

// putAgent and getAgent are put and get of an agent by its id, as
// AgentToActivate keeps it.
func (c *agentCache) putAgent(r agentReading, a *Agent, appStatus string) {
	c.put(r, a.ID, agentEntry{a: *a, appStatus: appStatus})
}

func (c *agentCache) getAgent(id string) (*Agent, string, bool) {
	e, ok := c.get(id)
	return &e.a, e.appStatus, ok
}
