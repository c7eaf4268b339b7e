package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/failpoint"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// historyServeEnv, set to a data dir, makes TestHistoryServerProcess a
// server on it (listening on promoListenEnv) with a one-second retention,
// for the crash tests to SIGKILL; otherwise that test does nothing.
const historyServeEnv = "TASKACTIONS_E2E_HISTORY_SERVER"

func TestHistoryServerProcess(t *testing.T) {
	dir := os.Getenv(historyServeEnv)
	if dir == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg := testserver.Config(dir, os.Getenv(promoListenEnv))
	cfg.Retention = time.Second
	if err := app.Run(ctx, cfg, testenv.Logger()); err != nil {
		t.Fatal(err)
	}
}

// A server SIGKILLed at each step of recording a finished action (the
// terminal status written; history has it; the object deleted by
// retention), then restarted on its data
// dir: the action ends with one terminal phase, history has it exactly
// once (the run counts one action, succeeded once), its object is
// retired, and it reads as it should.
func TestCrashAtEachStepOfRecording(t *testing.T) {
	for _, fp := range []string{failpoint.TerminalWritten, failpoint.Recorded, failpoint.Retired} {
		t.Run(fp, func(t *testing.T) {
			dir := t.TempDir()
			dataDir := filepath.Join(dir, "data")
			s1, exited, _ := startServerProcess(t, "TestHistoryServerProcess", historyServeEnv, dir, dataDir, "TASKACTIONS_FAILPOINT="+fp)
			run := newRun()
			resp, err := s1.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, "root", "", "echo"))
			if err != nil || resp.StatusCode() != http.StatusCreated {
				t.Fatalf("enqueue: %v %v", err, resp)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the server did not reach failpoint %s", fp)
			}

			s2, err := startServer(dataDir, func(c *app.Config) { c.Retention = time.Second })
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Stop()
			base := "/projects/" + run.Project + "/domains/" + run.Domain + "/runs/" + run.Name
			eventually(t, 30*time.Second, "the action to be recorded and retired", func() bool {
				code, b := s2.get(t, base)
				return code == 200 && contains(string(b), `"actionCount":1,`) && liveObjects(s2, run) == 0
			})
			_, b := s2.get(t, base)
			var sum client.RunSummary
			mustJSON(t, b, &sum)
			if sum.Phase != client.SUCCEEDED || len(sum.PhaseCounts) != 1 || sum.PhaseCounts["SUCCEEDED"] != 1 || sum.EndedAt == nil {
				t.Errorf("run summary after the crash at %s: %s", fp, b)
			}
			code, b := s2.get(t, base+"/actions/root")
			var a client.Action
			if code != 200 || json.Unmarshal(b, &a) != nil {
				t.Fatalf("GET the retired action: %d %s", code, b)
			}
			succeeded := 0
			for _, h := range a.PhaseHistory {
				if h.Phase == client.SUCCEEDED {
					succeeded++
				}
			}
			if a.Phase != client.SUCCEEDED || a.Attempts != 1 || succeeded != 1 {
				t.Errorf("the action after the crash at %s: phase %s, %d attempts, %d SUCCEEDED in its history", fp, a.Phase, a.Attempts, succeeded)
			}
		})
	}
}

// startServerProcess runs a server in a process of its own: this test
// binary running only the test named entry, which serves dataDir when
// serveEnv names it (listening on promoListenEnv), with extra
// environment. It returns a client of it, a channel closed when it exits,
// and the process, killed with the test.
//
// The port is picked free and then handed to the process, so another
// server may take it in between: then the process fails to listen and is
// started again on another port. A server is taken as ready only once it
// accepts the admin token of dataDir, which no other server would.
func startServerProcess(t *testing.T, entry, serveEnv, dir, dataDir string, env ...string) (*server, <-chan struct{}, *exec.Cmd) {
	t.Helper()
	for try := 1; ; try++ {
		s, exited, cmd, stderr := tryServerProcess(t, entry, serveEnv, dir, dataDir, env)
		if s != nil {
			return s, exited, cmd
		}
		if !bytes.Contains(stderr, []byte("address already in use")) || try == 3 {
			t.Fatalf("the server process exited:\n%s", stderr)
		}
	}
}

// tryServerProcess starts the server process once. It returns the server
// once it is ready, or, if the process exits first, what it wrote to stderr.
func tryServerProcess(t *testing.T, entry, serveEnv, dir, dataDir string, env []string) (*server, <-chan struct{}, *exec.Cmd, []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^"+entry+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), serveEnv+"="+dataDir, promoListenEnv+"="+addr, "TMPDIR="+dir), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			return nil, nil, nil, stderr.Bytes()
		case <-time.After(100 * time.Millisecond):
		}
		if s := readyServer(addr, dataDir); s != nil {
			return s, exited, cmd, nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server process on %s was not ready in 90 s:\n%s", addr, stderr.String())
		}
	}
}

// readyServer returns a client of the server on addr if it is ready and
// accepts the admin token of dataDir, else nil.
func readyServer(addr, dataDir string) *server {
	token, err := testserver.AdminToken(dataDir)
	if err != nil {
		return nil
	}
	s := &server{url: "http://" + addr, dataDir: dataDir, token: token, http: &http.Client{Transport: testserver.Authorized(token, nil)}}
	if s.api, err = client.NewClientWithResponses(s.url+"/api/v1", client.WithBearerToken(token)); err != nil {
		return nil
	}
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	session, err := s.api.GetSessionWithResponse(context.Background())
	if err != nil || session.StatusCode() != http.StatusOK {
		return nil
	}
	return s
}
