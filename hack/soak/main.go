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
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

func start(bin, dataDir string, args ...string) (*server, time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args = append([]string{"--data-dir", dataDir, "--listen", addr, "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(dataDir), "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, 0, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	s := &server{cmd: cmd, url: "http://" + addr, dataDir: dataDir, client: &http.Client{Timeout: time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256}}, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.exited) }()
	for {
		select {
		case <-s.exited:
			return nil, 0, fmt.Errorf("server exited; see %s", logf.Name())
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Since(t0) > 3*time.Minute {
			return nil, 0, fmt.Errorf("not ready after 3 minutes")
		}
	}
	ready := time.Since(t0)
	b, err := os.ReadFile(filepath.Join(dataDir, "api-token"))
	if err != nil {
		return nil, 0, err
	}
	s.token = strings.TrimSpace(string(b))
	return s, ready, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *server) do(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func enqueueBody(project, run, name, parent string) map[string]any {
	a := map[string]any{
		"actionId": map[string]any{"run": map[string]any{"project": project, "domain": "soak", "name": run}, "name": name},
		"task":     map[string]any{"taskTemplate": map[string]any{"type": "echo"}},
	}
	if parent != "" {
		a["parentActionName"] = parent
	}
	return map[string]any{"action": a}
}

// enqueueRuns enqueues n actions in runs of size, and waits for every run
// to succeed. It returns the runs' names.
func (s *server) enqueueRuns(project string, n, size, concurrency int, done *atomic.Int64) ([]string, error) {
	runs := make([]string, (n+size-1)/size)
	for i := range runs {
		runs[i] = fmt.Sprintf("r%06d", i)
	}
	work := make(chan int, len(runs))
	for i := range runs {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range concurrency {
		wg.Go(func() {
			for i := range work {
				count := min(size, n-i*size)
				if err := s.enqueueRun(project, runs[i], count); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(int64(count))
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	for i, r := range runs {
		want := min(size, n-i*size)
		for {
			code, b, err := s.do("GET", "/api/v1/projects/"+project+"/domains/soak/runs/"+r, nil)
			if err != nil {
				return nil, err
			}
			if code == 200 && bytes.Contains(b, []byte(fmt.Sprintf(`"phaseCounts":{"SUCCEEDED":%d}`, want))) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return runs, nil
}

func (s *server) enqueueRun(project, run string, count int) error {
	for j := range count {
		name, parent := fmt.Sprintf("a%03d", j), "a000"
		if j == 0 {
			parent = ""
		}
		if s.tokens != nil {
			<-s.tokens
		}
		for attempt := 0; ; attempt++ {
			code, b, err := s.do("POST", "/api/v1/actions", enqueueBody(project, run, name, parent))
			if err == nil && (code == 201 || code == 200) {
				break
			}
			if attempt > 20 {
				return fmt.Errorf("enqueue %s/%s: %d %s %v", run, name, code, b, err)
			}
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
	}
	return nil
}

// settle waits until, for 3 s in a row, no action waits for a manager
// worker and the executor runs no round: every change has been recorded
// and every finished action let go.
func (s *server) settle(limit time.Duration) error {
	idleSince, rounds := time.Time{}, -1.0
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		m := s.metrics()
		r := m["taskactions_executor_reconcile_seconds_count"] // none before the first round
		if depth, ok := m["taskactions_manager_queue_depth"]; !ok || depth != 0 || r != rounds {
			idleSince, rounds = time.Time{}, r
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) >= 3*time.Second {
			return nil
		}
	}
	return fmt.Errorf("the server was still busy after %s", limit)
}

// metrics reads the server's metrics, each series (name and labels, as
// /metrics writes them) to its value; none when it cannot.
func (s *server) metrics() map[string]float64 {
	out := map[string]float64{}
	_, b, err := s.do("GET", "/metrics", nil)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

// sample is one measurement of the server's footprint.
type sample struct {
	at             time.Duration
	done           int64
	etcdDB, rssKiB int64
	live           int64
}

func (s *server) sample(t0 time.Time, done int64) sample {
	return sample{at: time.Since(t0).Round(time.Second), done: done,
		etcdDB: fileSize(etcdFile(s.dataDir)), rssKiB: rssKiB(s.cmd.Process.Pid),
		live: int64(s.metrics()[`taskactions_cache_objects{kind="TaskAction"}`])}
}

func (x sample) String() string {
	return fmt.Sprintf("%8s  actions %7d  live objects %7d  etcd db %7.1f MiB  RSS %7.1f MiB", x.at, x.done, x.live, float64(x.etcdDB)/(1<<20), float64(x.rssKiB)/1024)
}

// etcdFile is the embedded etcd's database file in a data dir.
func etcdFile(dataDir string) string {
	return filepath.Join(dataDir, "etcd", "member", "snap", "db")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}

// rssParts splits the process's RSS (KiB) into what its mappings hold:
// the binary's own pages, the etcd file (which etcd maps whole, with
// MAP_POPULATE) and anonymous memory (the Go heap, stacks, the runtime).
func rssParts(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return ""
	}
	parts := map[string]int64{}
	name, exe := "", exePath(pid)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			name = "other"
			switch {
			case len(f) == 5 || strings.HasPrefix(f[5], "["):
				name = "anonymous"
			case strings.HasSuffix(f[5], "/snap/db"):
				name = "etcd file"
			case f[5] == exe:
				name = "binary"
			}
		case len(f) >= 2 && f[0] == "Rss:":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			parts[name] += n
		}
	}
	return fmt.Sprintf("binary %.1f, etcd file %.1f, anonymous %.1f, other %.1f MiB",
		float64(parts["binary"])/1024, float64(parts["etcd file"])/1024, float64(parts["anonymous"])/1024, float64(parts["other"])/1024)
}

func exePath(pid int) string {
	p, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return p
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
