package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// What a task starts in a session of its own (setsid) dies with the
// server that ran it: at a SIGTERM, and, after a kill -9, at the next
// start. With the host's default (a cgroup per attempt where the server
// may create one) and with a subreaper instead of cgroups.
func TestSetsidChildDiesWithItsServer(t *testing.T) {
	for _, mode := range []struct{ name, flag string }{
		{"default", "--process-cgroups=true"},
		{"subreaper", "--process-cgroups=false"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			dataDir := filepath.Join(dir, "data")
			addr := testserver.FreeAddr(t)
			args := []string{"--listen", addr, "--data-dir", dataDir, "--process-sandbox", "off", mode.flag}
			run := client.RunIdentifier{Project: "stop", Domain: "dev", Name: "r1"}
			for _, stop := range []struct {
				name string
				sig  syscall.Signal
			}{{"sigterm", syscall.SIGTERM}, {"sigkill", syscall.SIGKILL}} {
				p := startServer(t, args...)
				waitReady(t, p, addr)
				t.Logf("%s: %s", stop.name, confinementOf(p.log()))
				// Each attempt writes a file of its own: a restarted attempt
				// starts another child.
				pidFile := filepath.Join(dir, stop.name)
				enqueueScript(t, apiClient(t, addr, dataDir), run, stop.name,
					fmt.Sprintf(`[ -e %[1]s.pid ] && exec sleep 1000; setsid sleep 1000 & echo $! > %[1]s.tmp; mv %[1]s.tmp %[1]s.pid; sleep 1000`, pidFile))
				pid := waitPidFile(t, pidFile+".pid")
				if err := p.cmd.Process.Signal(stop.sig); err != nil {
					t.Fatal(err)
				}
				<-p.done
				if stop.sig == syscall.SIGKILL {
					// Nothing was its subreaper or killed its cgroup: the next
					// start sweeps it.
					p = startServer(t, args...)
					waitReady(t, p, addr)
				}
				waitGone(t, pid, mode.name+" "+stop.name)
				if stop.sig == syscall.SIGKILL {
					if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
						t.Fatal(err)
					}
					<-p.done
				}
			}
		})
	}
}

// confinementOf is the server's log line saying how it holds what tasks
// start (cgroups or a subreaper).
func confinementOf(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"message":"process tasks run in cgroups`) || strings.Contains(l, `"message":"process tasks are swept`) || strings.Contains(l, `"message":"process tasks run without`) {
			return l
		}
	}
	return "(no line on process confinement)"
}
