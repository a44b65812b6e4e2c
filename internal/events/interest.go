package events

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Only a subscriber reads another node's events, and most users have
// none: a program that polls, or waits on the node that runs its work,
// subscribes nowhere else. Yet every event went to every node, inline: on
// PostgreSQL with an API node and two workers that was three payloads per
// event for the database to queue and deliver, and a tenth of a run's
// CPU. So a node tells the others which users it subscribes to
// (interestTopic, when a user's first subscriber comes and every
// interestRefresh while any stays), and a node notifies an event only when
// another has said it wants that user's within interestTTL.
//
// What interest saves is delivery, never an event. A node that may have
// missed what the others said (it has just started listening, or listens
// again) asks them to say it again (interestAskTopic). And an event a node
// did not notify because the interest had not reached it yet (the
// subscriber came a moment before) is in the store, where the subscriber's
// node finds it within idleScan (horizon.go: every stream's seqs are
// scanned then, the streams that hold nothing included) and hands it out
// in order.

const (
	// interestTopic is the signal a node sends for a user it subscribes
	// to, and interestAskTopic the one that asks every node to send
	// theirs again.
	interestTopic    = "events.interest"
	interestAskTopic = "events.interest?"
	// interestRefresh is how often a node repeats its users' interest.
	interestRefresh = 10 * time.Second
	// interestTTL is how long a node keeps notifying a user's events
	// after it last heard another's interest in them.
	interestTTL = 3 * interestRefresh
	// idleScan is how often the streams that hold nothing look for events
	// in the store that nobody published to them.
	idleScan = time.Second
	// maxInterestBytes bounds the users one interest signal names (comma
	// separated), well under a notification's 8000 bytes: a node with
	// thousands of subscribed users says so in a few dozen notifications,
	// not one each (the notifier holds at most maxPendingNotes).
	maxInterestBytes = 6000
)

// interest is what a node has heard of the others' subscribers: the users
// whose events it notifies, until when.
type interest struct {
	mu    sync.Mutex
	users map[string]time.Time
}

// heard records another node's interest in user's events.
func (i *interest) heard(user string) {
	until := time.Now().Add(interestTTL)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.users == nil {
		i.users = map[string]time.Time{}
	}
	i.users[user] = until
}

// wanted reports whether another node may subscribe to user's events.
func (i *interest) wanted(user string) bool {
	now := time.Now()
	i.mu.Lock()
	defer i.mu.Unlock()
	until, ok := i.users[user]
	return ok && now.Before(until)
}

// prune forgets the interest that has lapsed (watch, every
// interestRefresh).
func (i *interest) prune() {
	now := time.Now()
	i.mu.Lock()
	defer i.mu.Unlock()
	for u, until := range i.users {
		if !now.Before(until) {
			delete(i.users, u)
		}
	}
}

// handleInterest has this node hear the others' interest, and answer when
// asked; "" (the listener was down: what was said meanwhile is lost) asks.
func (b *Bus) handleInterest() {
	b.Handle(interestTopic, func(users string) {
		if users == "" {
			b.Broadcast(interestAskTopic, "")
			return
		}
		for _, u := range strings.Split(users, ",") {
			b.interest.heard(u)
		}
	})
	b.Handle(interestAskTopic, func(string) { b.announceInterest() })
}

// announceInterest tells the other nodes every user this node subscribes
// to.
func (b *Bus) announceInterest() {
	for _, users := range interestChunks(b.subscribedUsers(), maxInterestBytes) {
		b.Broadcast(interestTopic, users)
	}
}

// interestChunks joins users with commas into as few signals as fit max
// bytes each (a user longer than max goes alone).
func interestChunks(users []string, max int) []string {
	var out []string
	var cur strings.Builder
	for _, u := range users {
		if cur.Len() > 0 && cur.Len()+1+len(u) > max {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(',')
		}
		cur.WriteString(u)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// watch, while the listener runs, scans the streams that hold nothing
// every idleScan and repeats this node's interest every interestRefresh.
func (b *Bus) watch(ctx context.Context) {
	scan := time.NewTicker(idleScan)
	defer scan.Stop()
	refreshed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-scan.C:
		}
		if time.Since(refreshed) >= interestRefresh {
			refreshed = time.Now()
			b.interest.prune()
			b.announceInterest()
		}
		if b.anySubscribers() {
			b.horizon.kickIdle(b)
		}
	}
}

// anySubscribers reports whether this node has subscribers.
func (b *Bus) anySubscribers() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs) > 0
}

// subscribedUsers are the users with subscribers on this node.
func (b *Bus) subscribedUsers() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	users := make([]string, 0, len(b.subs))
	for u := range b.subs {
		users = append(users, u)
	}
	return users
}
