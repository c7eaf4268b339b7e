// Package logs keeps what tasks write to stdout and stderr: one
// append-only file per attempt and stream, in the action's output dir,
// bounded per attempt, with a change signal for the streams that follow
// a log while it grows; and, given a Shared store (the history database),
// a copy there that every replica reads (shared.go).
//
// The process plugin writes through a Writer; executors outside the
// server append through the API. Both go through Store, which is what
// keeps the bound and wakes the followers: a file written behind its back
// is still served, but only read again at the next change or poll.
package logs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// Stream is stdout or stderr.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// ErrBadKey is a key that names no log (an unknown stream, attempt 0).
var ErrBadKey = errors.New("no such log")

// Key names one log: a stream of an attempt of an action.
type Key struct {
	Project, Domain, Run, Action string
	Attempt                      int
	Stream                       Stream
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s/%s attempt %d %s", k.Project, k.Domain, k.Run, k.Action, k.Attempt, k.Stream)
}

func (k Key) valid() bool {
	return k.Attempt >= 1 && (k.Stream == Stdout || k.Stream == Stderr)
}

// attemptKey is a Key without its stream: the bound is per attempt.
type attemptKey struct {
	project, domain, run, action string
	attempt                      int
}

func (k Key) attemptKey() attemptKey {
	return attemptKey{k.Project, k.Domain, k.Run, k.Action, k.Attempt}
}

// DefaultMaxBytes is --log-max-bytes' default.
const DefaultMaxBytes = 10 << 20

// Store is safe for concurrent use. Create it with New.
type Store struct {
	root string
	max  int64

	mu       sync.Mutex
	attempts map[attemptKey]*attempt // those being written or followed

	shared atomic.Pointer[sharing] // nil: logs are this replica's files only
}

// sharing is the shared store and where its failures are told.
type sharing struct {
	to    Shared
	onErr func(error)
}

// Share makes the store keep its logs in to as well (nil: no more), from
// the next Writer, append or reader on; onErr hears of a shipment that
// failed (the bytes stay in the local file).
func (s *Store) Share(to Shared, onErr func(error)) {
	if to == nil {
		s.shared.Store(nil)
		return
	}
	if onErr == nil {
		onErr = func(error) {}
	}
	s.shared.Store(&sharing{to: to, onErr: onErr})
}

// New returns a store whose logs live under root (the executor's output
// root: <root>/<project>/<domain>/<run>/<action>/<stream>-<attempt>.log),
// keeping at most maxBytes per attempt (DefaultMaxBytes when 0).
func New(root string, maxBytes int64) *Store {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Store{root: root, max: maxBytes, attempts: map[attemptKey]*attempt{}}
}

// MaxBytes is the bound per attempt.
func (s *Store) MaxBytes() int64 { return s.max }

// Dir is an action's output dir, where its logs are.
func (s *Store) Dir(project, domain, run, action string) string {
	return filepath.Join(s.root, project, domain, run, action)
}

// Path is the file of a log.
func (s *Store) Path(k Key) string {
	return filepath.Join(s.Dir(k.Project, k.Domain, k.Run, k.Action), string(k.Stream)+"-"+strconv.Itoa(k.Attempt)+".log")
}

func droppedPath(logPath string) string { return logPath + ".dropped" }

// attempt is the shared state of an attempt's two logs while anything
// writes or follows them.
type attempt struct {
	refs int // under Store.mu

	mu      sync.Mutex // orders appends and their signals
	used    int64      // bytes of both logs
	dropped map[Stream]int64
	midLine map[Stream]bool // the log does not end with a newline
	changed chan struct{}   // closed at the next append or end
	writers int             // open Writers of this process
	ended   bool            // every Writer of this process closed
}

// acquire returns the attempt's state, loaded from its files when no one
// holds it; release gives it back.
func (s *Store) acquire(k Key) *attempt {
	ak := k.attemptKey()
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.attempts[ak]
	if a == nil {
		a = &attempt{dropped: map[Stream]int64{}, midLine: map[Stream]bool{}, changed: make(chan struct{})}
		s.load(a, k)
		s.attempts[ak] = a
	}
	a.refs++
	return a
}

// load reads an attempt's tally from its files.
func (s *Store) load(a *attempt, k Key) {
	a.used = 0
	for _, st := range []Stream{Stdout, Stderr} {
		p := s.Path(Key{k.Project, k.Domain, k.Run, k.Action, k.Attempt, st})
		size, last := sizeAndLastByte(p)
		a.used += size
		a.midLine[st] = size > 0 && last != '\n'
		a.dropped[st] = max(a.dropped[st], readDropped(p))
	}
}

func (s *Store) release(k Key) {
	ak := k.attemptKey()
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.attempts[ak]; a != nil {
		if a.refs--; a.refs == 0 {
			delete(s.attempts, ak)
		}
	}
}

// append writes p to f within the attempt's bound, under the attempt's
// lock so that a follower that took the change channel before reading
// is always woken by the next append. It returns the log's size after.
func (s *Store) append(a *attempt, k Key, f *os.File, p []byte) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out, drop := s.fit(Tally{Used: a.used, MidLine: a.midLine[k.Stream], Dropped: a.dropped[k.Stream]}, k.Stream, p)
	var err error
	if len(out) > 0 {
		_, err = f.Write(out)
		a.midLine[k.Stream] = out[len(out)-1] != '\n'
	}
	a.used += int64(len(out))
	a.dropped[k.Stream] += drop
	a.signal()
	fi, serr := f.Stat()
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, fmt.Errorf("append to log %s: %w", k, err)
	}
	return fi.Size(), nil
}

// notice is the line that ends a log cut at the bound. It is written
// beyond the bound, once: a reader must see that the log is incomplete.
func (s *Store) notice(st Stream, midLine bool) []byte {
	nl := ""
	if midLine {
		nl = "\n"
	}
	return fmt.Appendf(nil, "%s[taskactions: this attempt's logs reached --log-max-bytes (%d bytes); the rest of its %s is dropped]\n", nl, s.max, st)
}

func (a *attempt) signal() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// Append appends p to a log (the API's POST, for executors outside this
// server), creating it when needed. It returns the log's size and the
// bytes of the attempt dropped so far. With a Shared store, the log is
// there only: another replica may take the next POST.
func (s *Store) Append(ctx context.Context, k Key, p []byte) (size, dropped int64, err error) {
	if !k.valid() {
		return 0, 0, ErrBadKey
	}
	a := s.acquire(k)
	defer s.release(k)
	if sh := s.shared.Load(); sh != nil {
		size, dropped, err = sh.to.LogAppend(ctx, k, func(t Tally) ([]byte, int64) { return s.fit(t, k.Stream, p) })
		a.mu.Lock()
		a.signal()
		a.mu.Unlock()
		return size, dropped, err
	}
	f, err := s.open(k)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if size, err = s.append(a, k, f, p); err != nil {
		return 0, 0, err
	}
	a.mu.Lock()
	dropped = a.dropped[k.Stream]
	a.mu.Unlock()
	if dropped > 0 {
		writeDropped(s.Path(k), dropped)
	}
	return size, dropped, nil
}

func (s *Store) open(k Key) (*os.File, error) {
	path := s.Path(k)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	// Read too: a Shipper reads back what was written, through the same
	// file (a task may swap the path for a symlink).
	f, err := openFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

func sizeAndLastByte(path string) (int64, byte) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, 0
	}
	b := make([]byte, 1)
	_, _ = f.ReadAt(b, fi.Size()-1)
	return fi.Size(), b[0]
}

func readDropped(logPath string) int64 {
	b, err := readFile(droppedPath(logPath))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

// writeDropped records how much of a log was dropped, for readers after
// its writer is gone (a restart, another request).
func writeDropped(logPath string, n int64) {
	f, err := openFile(droppedPath(logPath), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(strconv.AppendInt(nil, n, 10))
	_ = f.Close()
}

// Dropped is what a log lost to the bound.
func (s *Store) Dropped(k Key) int64 {
	s.mu.Lock()
	a := s.attempts[k.attemptKey()]
	s.mu.Unlock()
	if a != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.dropped[k.Stream]
	}
	return readDropped(s.Path(k))
}

// openLocal opens this replica's file of a log; nil when there is none.
func (s *Store) openLocal(k Key) (*os.File, error) {
	f, err := openFile(s.Path(k), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}
