package app

import (
	"fmt"
	"syscall"
)

// Every connection and open stream holds a file descriptor. When the
// process runs out, the embedded etcd cannot open its next WAL file and
// exits, taking the server with it. So the soft limit is raised to the hard
// one at start, and HTTP and the process tasks get shares of it that leave
// etcd and the API server their headroom (fdBudget).

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the soft limit in force.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if l.Cur < l.Max {
		raised := l
		raised.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			l = raised
		}
	}
	return l.Cur, nil
}

// fdsPerProcess is what a running process task may hold in the server:
// its stdout and stderr pipes and log files and a pidfd (5, measured),
// and for a moment while it starts, the fork's own pipe and the sandbox's.
const fdsPerProcess = 8

// fdBudget splits a descriptor limit. First 256 plus an eighth of it stay
// with etcd, the API server and the rest of the process, which must never
// run out (etcd exits when it cannot open a WAL file). Of the rest, a
// quarter runs process tasks (fdsPerProcess each, at least one task), and
// HTTP has the remainder: every connection holds a descriptor and every
// stream, which may be a log stream, one more (its file), so connections
// plus streams stay within it; a sixteenth (at least 16) of the
// connections is kept for plain requests, so that with every stream open
// the API still answers.
func fdBudget(fdLimit uint64) (connections, streams, processes int) {
	reserve := 256 + fdLimit/8
	rest := uint64(0)
	if fdLimit > reserve {
		rest = fdLimit - reserve
	}
	procs := max(1, rest/4/fdsPerProcess)
	web := uint64(32)
	if rest > procs*fdsPerProcess+web {
		web = rest - procs*fdsPerProcess
	}
	web = min(web, 1<<21)
	plain := max(16, web/16)
	st := max(1, (web-plain)/2)
	return int(web - st), int(st), int(min(procs, 1<<16))
}
