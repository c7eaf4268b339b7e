package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

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
