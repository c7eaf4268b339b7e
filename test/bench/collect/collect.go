// Package collect is how a process under measurement (the server, the
// floor) takes the benchmark's requests for a garbage collection: each
// SIGUSR1 runs one and returns the freed memory to the system, as an idle
// process's forced collections and the runtime's scavenger do in time.
// When the benchmark gives the process a descriptor (DoneFDEnv), a byte
// written there says the collection is done, so that requests never
// coalesce into one collection.
package collect

import (
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
)

// DoneFDEnv names the descriptor a process acknowledges collections on.
const DoneFDEnv = "BENCH_COLLECTED_FD"

// OnSignal runs a collection on each SIGUSR1, from now on.
func OnSignal() {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	var done *os.File
	if fd, err := strconv.Atoi(os.Getenv(DoneFDEnv)); err == nil {
		done = os.NewFile(uintptr(fd), "collected")
	}
	go func() {
		for range usr1 {
			debug.FreeOSMemory()
			if done != nil {
				_, _ = done.Write([]byte{1})
			}
		}
	}()
}
