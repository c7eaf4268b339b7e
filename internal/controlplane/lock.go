package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrDataDirLocked is returned when another process holds the data dir.
var ErrDataDirLocked = errors.New("data dir is in use")

// dirLock is an exclusive flock on <data-dir>/lock. The kernel releases it
// when the process dies, so a crash never leaves a stale lock behind. The
// file names the holder so the refused process can say who it is.
type dirLock struct {
	f *os.File
}

func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s", ErrDataDirLocked, dir, describeHolder(holder))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0)
	}
	return &dirLock{f: f}, nil
}

func describeHolder(b []byte) string {
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return "another process"
}

func (l *dirLock) release() error {
	// Closing the descriptor drops the flock; the file stays so that a
	// waiting reader never sees it vanish.
	return l.f.Close()
}
