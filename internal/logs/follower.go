package logs

import (
	"context"
	"io"
	"os"
)

// Follower reads a log as it grows. Take Changed before reading: the
// channel closes at the next append (or end) after that.
//
// It reads this replica's file of the log once there is one, else the
// shared store's copy. An append made here (a Writer's, or the API's)
// wakes it at once; one made on another replica reaches the shared store
// within ShipEvery, and the follower at its next poll (sse.TailPoll).
type Follower struct {
	s      *Store
	k      Key
	a      *attempt
	f      *os.File
	shared *sharedLog // nil without a shared store
}

// Follow returns a follower of a log; Close it when done. ctx bounds its
// reads of the shared store.
func (s *Store) Follow(ctx context.Context, k Key) (*Follower, error) {
	if !k.valid() {
		return nil, ErrBadKey
	}
	f := &Follower{s: s, k: k, a: s.acquire(k)}
	if sh := s.shared.Load(); sh != nil {
		f.shared = &sharedLog{ctx: ctx, to: sh.to, k: k}
	}
	return f, nil
}

// Changed is closed at the next append to the attempt's logs, or when
// its last Writer closes.
func (f *Follower) Changed() <-chan struct{} {
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	return f.a.changed
}

// Ended reports that the Writers of this process that wrote the attempt
// are all closed. An attempt written elsewhere (through the API, or by a
// server process before a restart) never ends here: the caller knows
// from the action when it has.
func (f *Follower) Ended() bool {
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	return f.a.ended
}

// Dropped is what the log lost to the bound so far.
func (f *Follower) Dropped() int64 {
	if file, _ := f.local(); file == nil && f.shared != nil {
		if _, dropped, err := f.shared.to.LogStat(f.shared.ctx, f.k); err == nil {
			return dropped
		}
	}
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	return f.a.dropped[f.k.Stream]
}

// local is this replica's file of the log, once it exists.
func (f *Follower) local() (*os.File, error) {
	var err error
	if f.f == nil {
		f.f, err = f.s.openLocal(f.k)
	}
	return f.f, err
}

// ReadAt reads the log at off; a log not created yet reads as empty. A
// file that cannot be opened safely (a task swapped it for a symlink) is
// read from the shared store, when there is one.
func (f *Follower) ReadAt(p []byte, off int64) (int, error) {
	file, err := f.local()
	switch {
	case file != nil:
		return file.ReadAt(p, off)
	case f.shared != nil:
		return f.shared.ReadAt(p, off)
	case err != nil:
		return 0, err
	}
	return 0, io.EOF
}

// Close releases the follower.
func (f *Follower) Close() {
	if f.f != nil {
		f.f.Close()
	}
	f.s.release(f.k)
}
