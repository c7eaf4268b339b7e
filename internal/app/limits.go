package app

import (
	"fmt"
	"syscall"
)

// Every connection and open stream holds a file descriptor. When the
// process runs out, the embedded etcd cannot open its next WAL file and
// exits, taking the server with it. So the soft limit is raised to the hard
// one at start, and HTTP gets a share of it that leaves etcd, the API
// server and the executor their headroom.

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

// httpLimits derives the connection and stream bounds from a descriptor
// limit: 256 plus an eighth of the limit stay with the control plane and
// the executor; of the rest, a sixteenth (at least 16) is kept for plain
// requests, so that with every stream open the API still answers.
func httpLimits(fdLimit uint64) (connections, streams int) {
	reserve := 256 + fdLimit/8
	conns := uint64(16)
	if fdLimit > reserve+conns {
		conns = fdLimit - reserve
	}
	conns = min(conns, 1<<20)
	plain := max(16, conns/16)
	return int(conns), int(max(1, conns-plain))
}
