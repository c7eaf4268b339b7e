package process

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Where the server may not create cgroups (cgroup.go), a process that
// leaves the attempt's process group (setsid) escapes the group kill. Then
// the plugin falls back on what an unprivileged process has:
//
//   - The server is a child subreaper (PR_SET_CHILD_SUBREAPER): what a
//     task leaves running when its parent exits is re-parented to the
//     server instead of init, so the server can find it, kill it and reap
//     it.
//   - Sweeps, when an attempt ends (exit, abort, timeout) and when the
//     server stops, kill every process that carries the attempt's marker
//     in its environment, and every child of the server that a task left
//     (in a process group or session other than the server's, and not a
//     running attempt's own) unless its marker names an attempt still
//     running.
//   - At start, a sweep kills what a killed server left: every process
//     whose environment places it under this server's output root, with
//     the group it leads.
//
// What escapes all of it is a process that both leaves its session and
// clears its environment while the server is killed: nothing names it.

// reaper is the fallback; zero when cgroups are used.
type reaper struct {
	on              bool
	root            string // the output root, for the start sweep
	self, pgid, sid int
}

// Subreap sets the fallback up (when Cgroups could not): the server
// becomes a child subreaper, and what an earlier server left under
// outputRoot is killed.
func (p *Plugin) Subreap(outputRoot string) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	self := os.Getpid()
	sid, _ := unix.Getsid(self)
	p.reaper = reaper{on: true, root: filepath.Clean(outputRoot), self: self, pgid: syscall.Getpgrp(), sid: sid}
	p.reaper.sweepRoot()
	return nil
}

// sweep kills the processes of the attempt with marker (if not ""), and
// the orphans tasks left, except those keep holds: the running attempts'
// shims and what carries their markers.
func (r reaper) sweep(marker string, keep func(procInfo) bool) {
	if !r.on {
		return
	}
	eachProc(func(pi procInfo) {
		switch {
		case marker != "" && pi.env[markerEnv] == marker:
		case pi.ppid == r.self && r.leftByTask(pi) && !keep(pi):
		default:
			return
		}
		r.killAndReap(pi)
	})
}

// sweepRoot kills every process of an attempt under the output root: at
// start (none is this server's) and at stop (all of them are over). One
// that leads its process group (a shim, or what left with setsid) takes
// its group along, as the next server's kill of an attempt it finds
// recorded would (killOrphan): a server's actions need no finalizer
// thanks to this sweep (SweptAtStart), and what an action deleted while
// no server ran left gets no other.
func (r reaper) sweepRoot() {
	if !r.on {
		return
	}
	eachProc(func(pi procInfo) {
		dir := pi.env["TASKACTIONS_OUTPUT_DIR"]
		if pi.env[markerEnv] == "" || !strings.HasPrefix(filepath.Clean(dir), r.root+string(filepath.Separator)) {
			return
		}
		if pi.pgid == pi.pid {
			_ = syscall.Kill(-pi.pgid, syscall.SIGKILL) // a group of the task's own; ESRCH: gone already
		}
		r.killAndReap(pi)
	})
}

// leftByTask: a child of the server in another group or session than
// the server's, which only tasks make (the attempts' shims lead groups of
// their own too: keep tells them apart).
func (r reaper) leftByTask(pi procInfo) bool {
	return pi.sid != r.sid || pi.pgid != r.pgid
}

func (r reaper) killAndReap(pi procInfo) {
	if !pi.zombie {
		_ = syscall.Kill(pi.pid, syscall.SIGKILL)
	}
	if pi.ppid != r.self {
		return // init, or the shim, reaps it
	}
	// Re-parented to the server, which os/exec does not wait for: reap it
	// here, or it stays a zombie.
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pi.pid, &ws, 0, nil)
}
