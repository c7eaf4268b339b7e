package logs

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// Writer appends to one log within its attempt's bound (the process
// plugin's stdout or stderr), with task tokens masked (mask.go). Close it
// when the attempt's process is done: once every Writer of an attempt is
// closed, its followers get the end. With a Shared store, a Shipper
// copies the file there as it grows.
type Writer struct {
	s    *Store
	k    Key
	a    *attempt
	f    *os.File
	ship *Shipper // nil without a shared store

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
	sh := s.shared.Load()
	shipped, grew := int64(0), false
	if sh != nil {
		shipped, grew = s.catchUp(sh, k, f)
	}
	a := s.acquire(k)
	a.mu.Lock()
	if grew {
		s.load(a, k)
	}
	a.writers++
	a.ended = false
	a.mu.Unlock()
	w := &Writer{s: s, k: k, a: a, f: f}
	if sh != nil && shipped >= 0 {
		w.ship = NewShipper(sh.to, k, f, shipped, w.dropped, sh.onErr)
		w.ship.Notify() // the file may hold what a crash kept from the store
	}
	return w, nil
}

// catchUp makes the file hold at least what the shared store holds of
// the log, and returns how much that is: an attempt begun again after a
// server stop, on this replica or another, writes on after what it
// wrote, at the same offsets. It returns -1 when the two cannot be put in
// step (the log then stays local); a store that does not answer is taken
// for empty (the shipper skips what it turns out to hold).
func (s *Store) catchUp(sh *sharing, k Key, f *os.File) (shipped int64, grew bool) {
	ctx, cancel := context.WithTimeout(context.Background(), shipTimeout)
	defer cancel()
	size, dropped, err := sh.to.LogStat(ctx, k)
	if err != nil {
		sh.onErr(fmt.Errorf("log %s: %w", k, err))
		return 0, false
	}
	if dropped > readDropped(s.Path(k)) {
		writeDropped(s.Path(k), dropped)
		grew = true
	}
	fi, err := f.Stat()
	if err != nil {
		return -1, false
	}
	// shipped is size, unless the file had less and took more than size
	// from the store (it grew meanwhile).
	off := fi.Size()
	for shipped = size; off < size; shipped = off {
		chunks, err := sh.to.LogChunks(ctx, k, off, readAhead)
		from := off
		for _, c := range chunks {
			if err == nil && c.Off <= off {
				_, err = f.Write(c.Data[off-c.Off:])
				off, grew = c.End(), true
			}
		}
		if err == nil && off == from {
			err = fmt.Errorf("the store says it holds %d bytes, and has none from %d", size, off)
		}
		if err != nil {
			sh.onErr(fmt.Errorf("log %s: copy the shared store's bytes to the local file: %w", k, err))
			return -1, grew
		}
	}
	return shipped, grew
}

// dropped is what the bound dropped of the log so far.
func (w *Writer) dropped() int64 {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	return w.a.dropped[w.k.Stream]
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
		if w.ship != nil {
			w.ship.Notify()
		}
	}
	return len(p), nil
}

// Close writes what was held back, ships the rest to the shared store
// (its failure is told to the store's onErr, not returned: the file has
// the log), closes the file, records what was dropped, and ends the
// attempt's logs for their followers when it was the last Writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	var err error
	if out := w.m.flush(); len(out) > 0 {
		_, err = w.s.append(w.a, w.k, w.f, out)
	}
	w.mu.Unlock()
	if w.ship != nil {
		_ = w.ship.Close()
	}
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
