package logs

import (
	"os"
	"sync"
)

// Writer appends to one log within its attempt's bound (the process
// plugin's stdout or stderr), with task tokens masked (mask.go). Close it
// when the attempt's process is done: once every Writer of an attempt is
// closed, its followers get the end.
type Writer struct {
	s *Store
	k Key
	a *attempt
	f *os.File

	mu sync.Mutex
	m  masker
}

// Create opens a log for appending: an attempt a server stop interrupted
// may start again, and its first run's output stays.
func (s *Store) Create(k Key) (*Writer, error) {
	if !k.valid() {
		return nil, ErrBadKey
	}
	f, err := s.open(k)
	if err != nil {
		return nil, err
	}
	a := s.acquire(k)
	a.mu.Lock()
	a.writers++
	a.ended = false
	a.mu.Unlock()
	return &Writer{s: s, k: k, a: a, f: f}, nil
}

// Write never fails for lack of room: what is past the bound is counted
// and dropped, so that the task does not die of a full log. What may be
// the beginning of a task token is held until the next Write or Close.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if out := w.m.mask(p); len(out) > 0 {
		if _, err := w.s.append(w.a, w.k, w.f, out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes what was held back, closes the file, records what was
// dropped, and ends the attempt's logs for their followers when it was
// the last Writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	var err error
	if out := w.m.flush(); len(out) > 0 {
		_, err = w.s.append(w.a, w.k, w.f, out)
	}
	w.mu.Unlock()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.a.mu.Lock()
	if d := w.a.dropped[w.k.Stream]; d > 0 {
		writeDropped(w.s.Path(w.k), d)
	}
	if w.a.writers--; w.a.writers == 0 {
		w.a.ended = true
	}
	w.a.signal()
	w.a.mu.Unlock()
	w.s.release(w.k)
	return err
}
