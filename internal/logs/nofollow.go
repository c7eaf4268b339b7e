package logs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// A log lives in its action's output dir, which the action's own process
// may write: it could swap a log for a symlink to a file of the server's
// (served to whoever may read the log) or a FIFO (an open that never
// returns). So logs are opened without following a symlink, without
// blocking, and only if they are regular files.

// errNotRegular is a log that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openFile is os.OpenFile for a file of an output dir.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", path, errNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readFile is os.ReadFile for a small file of an output dir.
func readFile(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64)
	n, err := f.Read(b)
	return b[:n], err
}
