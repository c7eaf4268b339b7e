package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"taskactions/pkg/client"
)

// server is one started server process. Every restart of the chaos run is
// a new server on the same address and data dir.
type server struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	token   string
	api     *client.ClientWithResponses
	exited  chan struct{}
}

// freeAddr picks a loopback address to listen on; the chaos run keeps it
// across restarts.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs bin on the embedded control plane (as make run does) and
// waits until /readyz answers 200; it returns the time that took.
func start(bin, addr, dataDir string, args ...string) (*server, time.Duration, error) {
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
		logf.Close()
		return nil, 0, err
	}
	s := &server{cmd: cmd, url: "http://" + addr, dataDir: dataDir, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.exited) }()
	if err := s.waitReady(t0, logf.Name()); err != nil {
		s.kill()
		return nil, 0, err
	}
	ready := time.Since(t0)
	token, err := client.ReadTokenFile(filepath.Join(dataDir, "api-token"))
	if err != nil {
		s.kill()
		return nil, 0, err
	}
	s.token = token
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	s.api, err = client.NewClientWithResponses(s.url+"/api/v1", client.WithHTTPClient(hc), client.WithBearerToken(token))
	if err != nil {
		s.kill()
		return nil, 0, err
	}
	return s, ready, nil
}

func (s *server) waitReady(t0 time.Time, logName string) error {
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("server exited; see %s", logName)
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Since(t0) > 3*time.Minute {
			return fmt.Errorf("not ready after 3 minutes; see %s", logName)
		}
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// kill is kill -9, waited for.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// stop is a graceful stop (SIGTERM), kill -9 after a minute.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.kill()
	}
}

// openFDs counts the process's open descriptors.
func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// attemptProcesses lists the pids of the processes that carry
// TASKACTIONS_ATTEMPT_MARKER and whose output dir is under dataDir: what
// a server of this run started for an attempt.
func attemptProcesses(dataDir string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		marked, ours := false, false
		for _, kv := range strings.Split(string(b), "\x00") {
			marked = marked || strings.HasPrefix(kv, "TASKACTIONS_ATTEMPT_MARKER=")
			ours = ours || strings.HasPrefix(kv, "TASKACTIONS_OUTPUT_DIR="+dataDir+"/")
		}
		if marked && ours {
			pids = append(pids, pid)
		}
	}
	return pids
}
