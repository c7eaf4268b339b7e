// Command chaos runs bin/taskactions through kill -9s and prints what they
// cost, in one command (make chaos, flags through CHAOS_ARGS):
//
//  1. The crash run (issue 34, item 8). A server on the embedded control
//     plane, on loopback and a fresh data dir, is sent -n `process` tasks
//     in runs of -run-size (a root and its children) through the
//     generated client, spread over the kills (or at -rate a second).
//     Each command sleeps under -max-sleep (a second), then appends
//     "run/action attempt" to a ledger outside the data dir. Meanwhile
//     the server is killed with SIGKILL -kills times, at random intervals
//     (exponential, mean -interval, from ready to kill), and restarted
//     each time on the same data dir. After the last restart every action
//     is waited for until terminal, the server is stopped, and it prints:
//     acknowledged enqueues lost (answered 2xx, absent at the end),
//     commands that ran to completion more than once (a ledger line twice
//     for one action), attempts that ran twice, the actions that failed
//     for good and their error codes, the distribution of system
//     failures, and the attempt processes alive a second after each kill
//     and after the final stop (those carrying TASKACTIONS_ATTEMPT_MARKER,
//     read from /proc/*/environ).
//  2. The descriptor budget (issue 34, item 3): a fresh server's open
//     descriptors (/proc/PID/fd) at idle, with each of -fd-tasks `sleep`
//     tasks running, and with a log stream open on each of the first
//     level's tasks; per task and per stream.
//
// The ledger is outside every output dir, so the tasks run with
// --process-sandbox off unless -sandbox says otherwise (a confined task
// cannot write it).
//
//	make chaos                                   # 400 tasks, 12 kills
//	make chaos CHAOS_ARGS='-n 100 -kills 4'      # a quick one
//	go run ./hack/chaos -bin bin/taskactions -h  # every flag
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type options struct {
	bin        string
	n, runSize int
	kills      int
	interval   time.Duration
	rate       float64
	maxSleep   time.Duration
	seed       uint64
	sandbox    string
	serverArgs string
	settle     time.Duration
	fdTasks    string
	fdSleep    time.Duration
	skipChaos  bool
	skipFDs    bool
	keep       bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/taskactions", "server binary")
	flag.IntVar(&o.n, "n", 400, "process tasks in the crash run")
	flag.IntVar(&o.runSize, "run-size", 20, "actions per run (a root and its children); 1 enqueues them flat, a run each")
	flag.IntVar(&o.kills, "kills", 12, "kill -9s of the server")
	flag.DurationVar(&o.interval, "interval", 7*time.Second, "mean time from a server's ready to its kill")
	flag.Float64Var(&o.rate, "rate", 0, "enqueues per second (0: spread over the kills, n/(kills*interval); unpaced without kills)")
	flag.DurationVar(&o.maxSleep, "max-sleep", time.Second, "each command sleeps a random time under this (tenths of a second) before it writes the ledger; longer ones are in flight through several kills")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed of the intervals and the commands' sleeps (0: from the clock)")
	flag.StringVar(&o.sandbox, "sandbox", "off", "--process-sandbox of the server (the ledger is outside the output dirs: off lets the tasks write it)")
	flag.StringVar(&o.serverArgs, "server-args", "", "more server flags, space separated (e.g. --max-system-failures 10)")
	flag.DurationVar(&o.settle, "timeout", 10*time.Minute, "how long the last server has to finish every action")
	flag.StringVar(&o.fdTasks, "fd-tasks", "10,50", "running tasks at which to count the server's descriptors")
	flag.DurationVar(&o.fdSleep, "fd-sleep", 2*time.Minute, "how long each task of the descriptor count sleeps")
	flag.BoolVar(&o.skipChaos, "skip-chaos", false, "skip the crash run")
	flag.BoolVar(&o.skipFDs, "skip-fds", false, "skip the descriptor count")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary dir (data dirs, ledger, server logs)")
	flag.Parse()
	if o.rate == 0 && o.kills > 0 {
		o.rate = float64(o.n) / (float64(o.kills) * o.interval.Seconds())
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if !o.skipChaos {
		fmt.Printf("== crash run: %d process tasks in runs of %d at %.1f/s, %d kill -9s at a mean interval of %s, seed %d\n",
			o.n, o.runSize, o.rate, o.kills, o.interval, o.seed)
		if err := crashRun(o, filepath.Join(dir, "crash")); err != nil {
			return err
		}
	}
	if !o.skipFDs {
		levels, err := parseLevels(o.fdTasks)
		if err != nil {
			return err
		}
		fmt.Printf("== descriptors: idle, then %v running tasks of sleep %s\n", levels, o.fdSleep)
		if err := fdBudget(o, filepath.Join(dir, "fds"), levels); err != nil {
			return err
		}
	}
	return nil
}

// serverFlags are the flags every server of the harness gets.
func (o options) serverFlags() []string {
	args := []string{"--process-sandbox", o.sandbox}
	return append(args, strings.Fields(o.serverArgs)...)
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-fd-tasks %q: want positive counts, comma separated", s)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-fd-tasks %q: want increasing counts", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// pause is an exponential interval of mean m, at least 100 ms.
func pause(rng *rand.Rand, m time.Duration) time.Duration {
	return max(100*time.Millisecond, time.Duration(rng.ExpFloat64()*float64(m)))
}
