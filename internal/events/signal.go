package events

// Besides events, nodes tell each other about changes that are not for
// clients, over the same LISTEN/NOTIFY channel: a user's credentials
// changed (auth.ChangeTopic), so the connections another node holds for
// that user must be checked. Such a signal is not stored: a node whose
// listener was down hears about everything at once (userID "") when it
// listens again.

// Broadcast tells the other nodes' handlers of topic about userID, soon
// (PostgreSQL; nothing to do on SQLite, where one process is all).
func (b *Bus) Broadcast(topic, userID string) {
	if !b.store.MultiNode() {
		return
	}
	b.notes.add(b, wire{Node: b.node, User: userID, Topic: topic})
}

// Handle has fn called with the userID of every broadcast of topic from
// another node, and with "" when broadcasts may have been missed. fn runs
// on the listener's goroutine, in order with the events (what was published
// after the broadcast is delivered after fn returns): keep it short.
// Register before Start.
func (b *Bus) Handle(topic string, fn func(userID string)) {
	b.sigMu.Lock()
	defer b.sigMu.Unlock()
	if b.handlers == nil {
		b.handlers = map[string][]func(string){}
	}
	b.handlers[topic] = append(b.handlers[topic], fn)
}

// signal calls topic's handlers; topic "" calls every handler with "".
func (b *Bus) signal(topic, userID string) {
	b.sigMu.Lock()
	var fns []func(string)
	for t, hs := range b.handlers {
		if topic == "" || t == topic {
			fns = append(fns, hs...)
		}
	}
	b.sigMu.Unlock()
	for _, fn := range fns {
		fn(userID)
	}
}
