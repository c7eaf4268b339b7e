package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// crashRun enqueues the tasks while killing and restarting the server,
// then lets a last server finish them and reports.
func crashRun(o options, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dataDir, ledger := filepath.Join(dir, "data"), filepath.Join(dir, "ran.log")
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(o.seed, 34))
	tenths := max(2, int(o.maxSleep/(100*time.Millisecond)))
	tasks := layout(o.n, max(1, o.runSize), func() int { return rng.IntN(tenths-1) + 1 })
	s, ready, err := start(o.bin, addr, dataDir, o.serverFlags()...)
	if err != nil {
		return err
	}
	fmt.Printf("server on %s ready in %s; data dir %s, ledger %s\n", addr, ready.Round(10*time.Millisecond), dataDir, ledger)
	f := &fleet{cur: s}
	t0 := time.Now()
	e := enqueue(f, tasks, ledger, o.rate, 4)
	var alive []int
	for i := range o.kills {
		time.Sleep(pause(rng, o.interval))
		s, n, err := killAndRestart(o, f, addr, dataDir)
		if err != nil {
			return err
		}
		alive = append(alive, n)
		fmt.Printf("kill %2d at %6.1fs: %d attempt processes alive 1 s later; ready again in %s; %d enqueues acknowledged, %d ledger lines\n",
			i+1, time.Since(t0).Seconds(), n, s.Round(10*time.Millisecond), e.count.Load(), len(readLedger(ledger)))
	}
	killsOver := time.Since(t0)
	<-e.done
	fmt.Printf("kills over at %.1fs; every enqueue answered at %.1fs (%d retries)\n", killsOver.Seconds(), time.Since(t0).Seconds(), e.retries.Load())
	got, err := waitTerminal(f.get(), e, tasks, o.settle)
	if err != nil {
		return err
	}
	fmt.Printf("every action terminal at %.1fs\n", time.Since(t0).Seconds())
	last := f.get()
	last.stop()
	time.Sleep(time.Second)
	leftover := attemptProcesses(dataDir)
	r := report{tasks: tasks, e: e, got: got, ledger: readLedger(ledger), aliveAfterKill: alive, leftover: leftover}
	r.print()
	return nil
}

// killAndRestart SIGKILLs the server of the moment, counts the attempt
// processes still alive a second later, and starts the next server on the
// same data dir. It returns the time to ready and that count.
func killAndRestart(o options, f *fleet, addr, dataDir string) (time.Duration, int, error) {
	f.get().kill()
	time.Sleep(time.Second)
	alive := len(attemptProcesses(dataDir))
	s, ready, err := start(o.bin, addr, dataDir, o.serverFlags()...)
	if err != nil {
		return 0, 0, err
	}
	f.set(s)
	return ready, alive, nil
}
