// Command soak runs bin/taskactions through the durable-history soak and
// prints what it measured, in one command (make soak):
//
//  1. N echo actions in runs of R (a root and its children) with
//     --retention, sampling the etcd file and the server's RSS every
//     -sample; then GET latency of retired actions next to live ones, and a
//     page of the run list;
//  2. the same soak with retention off, for throughput (fewer actions:
//     without retention every object stays in memory);
//  3. -live actions left live, the process RSS per live action, and the
//     time from a restart to ready, for this binary and for -old-bin.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	bin, oldBin          string
	actions, runSize     int
	baselineActions      int
	live                 int
	retention            time.Duration
	sample               time.Duration
	concurrency          int
	skipSoak, skipBase   bool
	skipRestart, verbose bool
	oldFlags             bool
	keepDir              string
	rate                 float64
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/taskactions", "server binary")
	flag.StringVar(&o.oldBin, "old-bin", "", "a server binary to compare restart and RSS with (optional)")
	flag.IntVar(&o.actions, "actions", 100000, "actions in the soak")
	flag.IntVar(&o.runSize, "run-size", 100, "actions per run")
	flag.IntVar(&o.baselineActions, "baseline-actions", 20000, "actions in the soak with retention off")
	flag.IntVar(&o.live, "live", 10000, "live actions for the restart and RSS measurement")
	flag.DurationVar(&o.retention, "retention", time.Minute, "--retention of the soak")
	flag.DurationVar(&o.sample, "sample", time.Minute, "sampling interval")
	flag.IntVar(&o.concurrency, "concurrency", 16, "runs enqueued at once")
	flag.BoolVar(&o.skipSoak, "skip-soak", false, "skip the soak")
	flag.BoolVar(&o.skipBase, "skip-baseline", false, "skip the soak with retention off")
	flag.BoolVar(&o.skipRestart, "skip-restart", false, "skip the restart measurement")
	flag.Float64Var(&o.rate, "rate", 30, "enqueues per second in the soak (0: as fast as the server takes them); a rate the server sustains shows whether the footprint levels off")
	flag.StringVar(&o.keepDir, "keep-dir", "", "keep the restart measurement's data dir here (for profiling restarts by hand)")
	flag.BoolVar(&o.oldFlags, "old-flags", false, "-bin predates --retention: pass none")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if !o.skipSoak {
		fmt.Printf("== soak: %d echo actions in runs of %d, --retention %s\n", o.actions, o.runSize, o.retention)
		if _, err := soak(o, o.actions, o.retention, true); err != nil {
			return err
		}
	}
	if !o.skipBase {
		fmt.Printf("== throughput, enqueued as fast as the server takes them: %d actions with --retention %s, then with retention off\n", o.baselineActions, o.retention)
		with, err := soak(o, o.baselineActions, o.retention, false)
		if err != nil {
			return err
		}
		without, err := soak(o, o.baselineActions, 0, false)
		if err != nil {
			return err
		}
		fmt.Printf("throughput with retention %s: %.0f actions/s; retention off: %.0f actions/s; ratio %.2f\n", o.retention, with, without, with/without)
	}
	if !o.skipRestart {
		for _, bin := range []string{o.bin, o.oldBin} {
			if bin == "" {
				continue
			}
			fmt.Printf("== %d live actions, restart (%s)\n", o.live, bin)
			if err := restart(o, bin); err != nil {
				return err
			}
		}
	}
	return nil
}

// server is a started server process.
type server struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	token   string
	client  *http.Client
	exited  chan struct{}
	// tokens paces enqueues (nil: no pacing).
	tokens <-chan time.Time
}

// soak runs n actions and reports actions/s (enqueue start to the last
// run succeeded).
func soak(o options, n int, retention time.Duration, full bool) (float64, error) {
	dir, err := os.MkdirTemp("", "soak-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var args []string
	if !o.oldFlags {
		args = []string{"--retention", retention.String()}
	}
	s, _, err := start(o.bin, filepath.Join(dir, "data"), args...)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	if full && o.rate > 0 {
		tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
		defer tick.Stop()
		s.tokens = tick.C
		fmt.Printf("enqueueing at %.0f actions/s\n", o.rate)
	}
	var done atomic.Int64
	t0 := time.Now()
	stopSampling := make(chan struct{})
	var samplers sync.WaitGroup
	samplers.Go(func() {
		fmt.Println(s.sample(t0, 0))
		t := time.NewTicker(o.sample)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				fmt.Println(s.sample(t0, done.Load()))
			}
		}
	})
	runs, err := s.enqueueRuns("soak", n, o.runSize, o.concurrency, &done)
	took := time.Since(t0)
	close(stopSampling)
	samplers.Wait()
	if err != nil {
		return 0, err
	}
	rate := float64(n) / took.Seconds()
	fmt.Printf("%d actions succeeded in %s: %.0f actions/s\n", n, took.Round(time.Second), rate)
	fmt.Println(s.sample(t0, int64(n)))
	if !full {
		return rate, nil
	}
	// Let retention catch up on the last runs, sampling as it goes.
	for range 3 {
		time.Sleep(retention / 2)
		fmt.Println(s.sample(t0, int64(n)))
	}
	s.tokens = nil
	if err := s.latencies(runs); err != nil {
		return 0, err
	}
	return rate, nil
}

// latencies compares GET of retired actions with live ones, and times a
// page of the run list.
func (s *server) latencies(runs []string) error {
	var retired []string
	for i := 0; i < 500; i++ {
		retired = append(retired, fmt.Sprintf("/api/v1/projects/soak/domains/soak/runs/%s/actions/a%03d", runs[i%len(runs)], (i*7)%100))
	}
	// A live run: enqueued now, read at once.
	var done atomic.Int64
	if _, err := s.enqueueRuns("soaklive", 100, 100, 1, &done); err != nil {
		return err
	}
	var live []string
	for i := 0; i < 500; i++ {
		live = append(live, fmt.Sprintf("/api/v1/projects/soaklive/domains/soak/runs/r000000/actions/a%03d", i%100))
	}
	for _, c := range []struct {
		name  string
		paths []string
	}{{"GET live action", live}, {"GET retired action", retired}, {"GET live action", live}, {"GET retired action", retired}} {
		p50, p99, err := s.timeGets(c.paths)
		if err != nil {
			return err
		}
		fmt.Printf("%-22s p50 %6.2f ms  p99 %6.2f ms  (%d requests)\n", c.name, p50, p99, len(c.paths))
	}
	var pages []string
	for range 200 {
		pages = append(pages, "/api/v1/projects/soak/domains/soak/runs?limit=100")
	}
	p50, p99, err := s.timeGets(pages)
	if err != nil {
		return err
	}
	fmt.Printf("run list, first page of 100 of %d runs: p50 %.2f ms  p99 %.2f ms\n", len(runs), p50, p99)
	return nil
}

func (s *server) timeGets(paths []string) (p50, p99 float64, err error) {
	ds := make([]float64, 0, len(paths))
	for _, p := range paths {
		t0 := time.Now()
		code, b, err := s.do("GET", p, nil)
		if err != nil {
			return 0, 0, err
		}
		if code != 200 {
			return 0, 0, fmt.Errorf("GET %s: %d %s", p, code, b)
		}
		ds = append(ds, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(ds)
	return ds[len(ds)/2], ds[len(ds)*99/100], nil
}

// restart leaves o.live actions live, measures RSS, restarts and times it.
func restart(o options, bin string) error {
	dir, err := os.MkdirTemp("", "soak-restart-")
	if err != nil {
		return err
	}
	if o.keepDir != "" {
		dir = o.keepDir
	} else {
		defer os.RemoveAll(dir)
	}
	dataDir := filepath.Join(dir, "data")
	args := []string{}
	if bin == o.bin {
		args = append(args, "--retention", "0")
	}
	s, ready, err := start(bin, dataDir, args...)
	if err != nil {
		return err
	}
	fmt.Printf("fresh start to ready: %s; RSS %.1f MiB\n", ready.Round(10*time.Millisecond), float64(rssKiB(s.cmd.Process.Pid))/1024)
	idle := rssKiB(s.cmd.Process.Pid)
	var done atomic.Int64
	if _, err := s.enqueueRuns("live", o.live, o.runSize, o.concurrency, &done); err != nil {
		s.stop()
		return err
	}
	// The runs succeeded; recording them, labelling every object as
	// recorded and the executor's removing its finalizers go on for a
	// while. Stopping before they end would leave the rest to the restart
	// measured next.
	t0 := time.Now()
	if err := s.settle(5 * time.Minute); err != nil {
		s.stop()
		return err
	}
	fmt.Printf("%d live actions recorded %s after the runs succeeded\n", o.live, time.Since(t0).Round(100*time.Millisecond))
	time.Sleep(10 * time.Second)
	rss := rssKiB(s.cmd.Process.Pid)
	fmt.Printf("%d live actions: RSS %.1f MiB = %.1f KiB per live action (all of the process; %.1f KiB above the idle server): %s\n",
		o.live, float64(rss)/1024, float64(rss)/float64(o.live), float64(rss-idle)/float64(o.live), rssParts(s.cmd.Process.Pid))
	s.stop()
	for i := range 2 {
		s, ready, err = start(bin, dataDir, args...)
		if err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		rss := rssKiB(s.cmd.Process.Pid)
		fmt.Printf("restart %d with %d live actions to ready: %s; RSS after 10 s %.1f MiB = %.1f KiB per live action: %s; etcd file size %.1f MiB\n",
			i+1, o.live, ready.Round(10*time.Millisecond), float64(rss)/1024, float64(rss)/float64(o.live), rssParts(s.cmd.Process.Pid), float64(fileSize(etcdFile(dataDir)))/(1<<20))
		s.stop()
	}
	return nil
}
