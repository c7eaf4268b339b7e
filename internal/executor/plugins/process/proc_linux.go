package process

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procInfo is what the plugin reads of a process from /proc.
type procInfo struct {
	pid, ppid, pgid, sid int
	zombie               bool
	startTicks           uint64            // its start time, in clock ticks since boot
	env                  map[string]string // its TASKACTIONS_ variables; nil: unreadable (not ours)
}

// readProc reads a process's stat (state, parent, group, session, start
// time) and its environment's TASKACTIONS_ variables.
func readProc(pid int) (procInfo, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// The command name (field 2) may hold spaces; fields after it do not.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, false
	}
	// f[0] is field 3 (state): then ppid, pgrp, session, and field 22
	// (the start time) is f[19].
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	pi := procInfo{pid: pid, zombie: f[0] == "Z"}
	pi.ppid, _ = strconv.Atoi(f[1])
	pi.pgid, _ = strconv.Atoi(f[2])
	pi.sid, _ = strconv.Atoi(f[3])
	pi.startTicks, _ = strconv.ParseUint(f[19], 10, 64)
	if env, err := os.ReadFile(dir + "/environ"); err == nil {
		pi.env = map[string]string{}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if k, v, ok := bytes.Cut(kv, []byte{'='}); ok && bytes.HasPrefix(k, []byte("TASKACTIONS_")) {
				pi.env[string(k)] = string(v)
			}
		}
	}
	return pi, true
}

// eachProc calls fn for every process but this one that it may read.
func eachProc(fn func(procInfo)) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		if pi, ok := readProc(pid); ok {
			fn(pi)
		}
	}
}

// startTicks reads a process's start time: with the pid, it names one
// process for good (0 when it is gone).
func startTicks(pid int) uint64 {
	pi, _ := readProc(pid)
	return pi.startTicks
}

// killMarked kills the process group of every process that carries the
// attempt's marker in its environment: the processes of an attempt that
// may have started without its pid being recorded. Processes of other
// users cannot be read and are not ours.
func killMarked(marker string) {
	eachProc(func(pi procInfo) {
		if pi.env[markerEnv] != marker {
			return
		}
		if pi.pgid > 1 {
			_ = syscall.Kill(-pi.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pi.pid, syscall.SIGKILL)
	})
}
