package main

import (
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// startProfiles serves measurements (make soak, the figures in issues):
// TASKACTIONS_CPUPROFILE writes a CPU profile of the whole run at a clean
// stop; TASKACTIONS_HEAPPROFILE writes a heap profile of live memory each
// time the process gets SIGUSR1. The returned func ends the CPU profile.
func startProfiles() (stop func()) {
	stop = func() {}
	if path := os.Getenv("TASKACTIONS_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			stop = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	if path := os.Getenv("TASKACTIONS_HEAPPROFILE"); path != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				writeHeapProfile(path)
			}
		}()
	}
	return stop
}

func writeHeapProfile(path string) {
	runtime.GC() // the profile then shows what is live, not what awaits collection
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.WriteHeapProfile(f)
}
