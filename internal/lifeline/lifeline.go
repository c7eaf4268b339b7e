// Package lifeline starts child processes whose parent-death signal means
// what it says: the server died.
//
// The kernel sends a child its parent-death signal (SysProcAttr.Pdeathsig)
// when the *thread* that forked it exits, not the process (golang/go#27505).
// Go retires a thread when a goroutine locked to it ends, so a child
// started from an arbitrary goroutine could get its signal while the
// server runs on. Start forks every child from one goroutine locked to an
// OS thread that never exits: the signal then comes when the server
// process dies, and only then.
//
// The signal reaches only the direct child. A caller whose command starts
// helpers makes that child a shim that kills its process group on the
// signal (the process plugin's shim, git's in internal/kargo/git).
package lifeline

import (
	"os/exec"
	"runtime"
	"sync"
)

// Start starts cmd from the process's forking thread. It is
// cmd.Start's drop-in: cmd's context, Cancel and WaitDelay work as
// they do there, and the caller waits for cmd as usual.
func Start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	forker()(request{cmd: cmd, done: done})
	return <-done
}

type request struct {
	cmd  *exec.Cmd
	done chan error
}

// forker starts the forking thread on first use. It is the process's one
// piece of shared state here because the thing it stands for is per
// process: one thread that lives as long as the process suffices for
// every caller, and a thread per caller would be a thread per caller that
// can never be retired.
var forker = sync.OnceValue(func() func(request) {
	reqs := make(chan request)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must not exit
		for r := range reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return func(r request) { reqs <- r }
})
