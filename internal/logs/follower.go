package logs

import (
	"io"
	"os"
)

// Follower reads a log as it grows. Take Changed before reading: the
// channel closes at the next append (or end) after that.
type Follower struct {
	s *Store
	k Key
	a *attempt
	f *os.File
}

// Follow returns a follower of a log; Close it when done.
func (s *Store) Follow(k Key) (*Follower, error) {
	if !k.valid() {
		return nil, ErrBadKey
	}
	return &Follower{s: s, k: k, a: s.acquire(k)}, nil
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
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	return f.a.dropped[f.k.Stream]
}

// ReadAt reads the log at off; a log not created yet reads as empty.
func (f *Follower) ReadAt(p []byte, off int64) (int, error) {
	if f.f == nil {
		file, err := f.s.OpenRead(f.k)
		if err != nil {
			return 0, err
		}
		if file == nil {
			return 0, io.EOF
		}
		f.f = file
	}
	return f.f.ReadAt(p, off)
}

// Close releases the follower.
func (f *Follower) Close() {
	if f.f != nil {
		f.f.Close()
	}
	f.s.release(f.k)
}
