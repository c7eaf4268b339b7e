package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// process is a child process whose output goes to a log file, so that a
// failing test can say where to look.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startProcess starts bin with args; its stdout and stderr go to
// dir/<name>.log.
func startProcess(dir, name, bin string, args []string, env ...string) (*process, error) {
	log := filepath.Join(dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop asks the process to end (SIGTERM) and kills it after grace.
func (p *process) stop(grace time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return exitErr(err)
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s; killed", p.name, grace)
	}
}

// kill ends the process with SIGKILL, as a crash would.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exitErr ignores the exit status a SIGTERM itself causes.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}

// waitHTTP polls url until it answers 200, the process exits, or timeout.
// caPEM, when set, is the CA of an HTTPS url; token, when set, is sent.
func (p *process) waitHTTP(ctx context.Context, url string, caPEM []byte, token string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	if caPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			return fmt.Errorf("%s exited before %s answered (%v); see %s", p.name, url, err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within %s; see %s", p.name, url, timeout, p.log)
		}
	}
}

// freePorts returns n loopback ports free at the time of the call.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
