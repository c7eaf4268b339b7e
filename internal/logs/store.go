// Package logs keeps what tasks write to stdout and stderr: one
// append-only file per attempt and stream, in the action's output dir,
// bounded per attempt, with a change signal for the streams that follow
// a log while it grows.
//
// The process plugin writes through a Writer; executors outside the
// server append through the API. Both go through Store, which is what
// keeps the bound and wakes the followers: a file written behind its back
// is still served, but only read again at the next change or poll.
package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
		for _, st := range []Stream{Stdout, Stderr} {
			p := s.Path(Key{k.Project, k.Domain, k.Run, k.Action, k.Attempt, st})
			size, last := sizeAndLastByte(p)
			a.used += size
			a.midLine[st] = size > 0 && last != '\n'
			a.dropped[st] = readDropped(p)
		}
		s.attempts[ak] = a
	}
	a.refs++
	return a
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
	keep := p[:min(int64(len(p)), max(s.max-a.used, 0))]
	drop := int64(len(p) - len(keep))
	var notice []byte
	if len(keep) > 0 {
		a.midLine[k.Stream] = keep[len(keep)-1] != '\n'
	}
	if drop > 0 && a.dropped[k.Stream] == 0 {
		notice = s.notice(k.Stream, a.midLine[k.Stream])
	}
	var err error
	if len(keep)+len(notice) > 0 {
		_, err = f.Write(append(keep[:len(keep):len(keep)], notice...))
	}
	a.used += int64(len(keep) + len(notice))
	if drop > 0 {
		a.dropped[k.Stream] += drop
	}
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
// bytes of the attempt dropped so far.
func (s *Store) Append(k Key, p []byte) (size, dropped int64, err error) {
	if !k.valid() {
		return 0, 0, ErrBadKey
	}
	a := s.acquire(k)
	defer s.release(k)
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
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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

// OpenRead opens a log for reading. A log not written yet reads as empty
// (fs.ErrNotExist is not an error here: the attempt may not have begun).
func (s *Store) OpenRead(k Key) (*os.File, error) {
	if !k.valid() {
		return nil, ErrBadKey
	}
	f, err := openFile(s.Path(k), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}
