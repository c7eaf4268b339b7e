// Package failpoint lets the crash tests kill the server at a named step
// of a protocol, the way etcd's gofail does, with nothing compiled in but
// a comparison: TASKACTIONS_FAILPOINT=<name> makes the process SIGKILL
// itself when it reaches Hit(<name>) for the first time. Unset, as in
// production, Hit does nothing.
package failpoint

import (
	"os"
	"syscall"
)

// The steps of recording a terminal action and retiring it.
const (
	TerminalWritten = "terminal-written" // the terminal status is in the object
	Recorded        = "recorded"         // history has the final view; no label yet
	Labelled        = "labelled"         // the terminal-status-recorded label is set
	Retired         = "retired"          // retention deleted the object
)

var armed = os.Getenv("TASKACTIONS_FAILPOINT")

// Hit kills the process if the failpoint name is armed.
func Hit(name string) {
	if armed != "" && armed == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
