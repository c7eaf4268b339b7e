package process

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// startTicks reads a process's start time (field 22 of /proc/<pid>/stat,
// in clock ticks since boot): with the pid, it names one process for good.
func startTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after it do not.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// killMarked kills the process group of every process whose environment
// holds entry (NAME=value): the processes of an attempt that may have
// started without its pid being recorded. Processes of other users cannot
// be read and are not ours.
func killMarked(entry string) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := []byte(entry)
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}
