package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// An attempt's exit record is a file of its output dir that the shim
// writes when the command ends, before the shim exits (starter.go): it
// holds the exit code. The server sees the exit only after the shim's, so
// whenever it could have acted on an exit, the record is there. A server
// that finds an attempt of a server process that is gone reads it: an
// attempt that ended is reported as it ended, never run again.
//
// The task may write the record itself (the dir is its own): that only
// reports an exit code the task chose, which it could have exited with.
// Written with a rename, it is whole or absent; it is not synced, so it
// survives the server's death, not the machine's.

// exitRecordName is the record's file name for the attempt's marker.
func exitRecordName(marker string) string { return ".taskactions-exit-" + marker }

// readExitRecord reads the exit code the attempt with marker recorded in
// dir, if it did.
func readExitRecord(dir, marker string) (int, bool) {
	if marker == "" {
		return 0, false
	}
	f, err := os.OpenFile(filepath.Join(dir, exitRecordName(marker)), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b := make([]byte, 16)
	n, _ := f.Read(b)
	code, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || code < 0 || code > 255 {
		return 0, false
	}
	return code, true
}
