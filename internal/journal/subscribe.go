package journal

// Start is how a new subscription begins.
type Start[V any] struct {
	// Resumed is true when the journal still covered the requested cursor:
	// Replay then holds exactly the events missed since it. Otherwise the
	// caller sends a reset (if a cursor was asked for) and the snapshot.
	Resumed bool
	Replay  []Entry[V]
	// Cursor is the point the subscription is consistent with: the cursor
	// to send with the snapshot or after the replay.
	Cursor uint64
}

// Subscribe registers a subscription to topic. With after non-nil it tries
// to resume from that cursor. Otherwise, or when that is no longer
// possible, it calls snapshot under the journal's lock, so that no event is
// published between the snapshot and the registration; snapshot returns the
// highest cursor its items reflect (a source cache may be a step ahead of
// what was published), and live events at or below it are not delivered.
func (j *Journal[V]) Subscribe(topic string, after *uint64, snapshot func() uint64) (*Subscription[V], Start[V]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var st Start[V]
	// Cursor 0 is never covered: streams give it to events that are no
	// resumable point (the items of a snapshot). A cursor above anything
	// published comes from another store or process; it is not covered
	// either, rather than waited for.
	if after != nil && *after > 0 && *after >= j.floor && *after <= j.last {
		st.Resumed = true
		st.Cursor = *after
		for _, e := range j.ring {
			if e.Cursor > *after && hasTopic(e.Topics, topic) {
				st.Replay = append(st.Replay, e)
				st.Cursor = e.Cursor
			}
		}
		if st.Cursor < j.last {
			st.Cursor = j.last
		}
	} else {
		st.Cursor = max(j.last, snapshot())
	}
	s := newSubscription(j, topic, st.Cursor, j.cfg.MailboxSize)
	if j.subs[topic] == nil {
		j.subs[topic] = map[*Subscription[V]]struct{}{}
	}
	j.subs[topic][s] = struct{}{}
	return s, st
}

// unsubscribe is called by Subscription.Close.
func (j *Journal[V]) unsubscribe(s *Subscription[V]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if m := j.subs[s.topic]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(j.subs, s.topic)
		}
	}
}

// Subscribers returns how many subscriptions are open.
func (j *Journal[V]) Subscribers() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, m := range j.subs {
		n += len(m)
	}
	return n
}

func hasTopic(topics []string, t string) bool {
	for _, x := range topics {
		if x == t {
			return true
		}
	}
	return false
}
