// Package failpoint lets the crash tests kill the server at a named step
// of a protocol, the way etcd's gofail does, with nothing compiled in but
// a comparison: TASKACTIONS_FAILPOINT=<name> makes the process SIGKILL
// itself when it reaches Hit(<name>) for the first time, or makes a part
// that asks Armed(<name>) fail. Unset, as in production, neither does
// anything.
package failpoint

import (
	"os"
	"sync"
	"syscall"
)

// The steps of recording a terminal action and retiring it.
const (
	TerminalWritten = "terminal-written" // the terminal status is in the object
	Recorded        = "recorded"         // history has the final view
	Retired         = "retired"          // retention deleted the object
)

// Failures of a running server's parts, for the tests that check the
// server stops with the cause instead of serving on without it. Armed
// tells the part to fail; nothing is killed.
const (
	EtcdDies             = "etcd-dies"              // the embedded etcd stops hard once the server is ready
	StageControllerFails = "stage-controller-fails" // the Stage controller fails as it starts
)

var armed = os.Getenv("TASKACTIONS_FAILPOINT")

// Armed reports whether the failpoint name is armed.
func Armed(name string) bool { return armed != "" && armed == name }

// Hit kills the process if the failpoint name is armed.
func Hit(name string) {
	if armed != "" && armed == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

var (
	mu         sync.Mutex
	afterReady []func()
)

// AfterReady has f run once the server is ready (Ready), if the failpoint
// name is armed: a part that fails then fails a running server, however
// long its start took.
func AfterReady(name string, f func()) {
	if !Armed(name) {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	afterReady = append(afterReady, f)
}

// Ready runs, each once, what armed failpoints deferred to the server's
// readiness.
func Ready() {
	mu.Lock()
	fs := afterReady
	afterReady = nil
	mu.Unlock()
	for _, f := range fs {
		go f()
	}
}
