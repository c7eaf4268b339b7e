// Package process is the process plugin: it runs container.command plus
// args as a local process in a process group of its own, with stdout and
// stderr in files of the action's output dir. Exit 0 succeeds; any other
// exit is a retryable user failure carrying the exit code. Abort, timeout
// and server shutdown kill the whole group.
//
// Running commands that arrive over HTTP is remote execution by design:
// the server enables this plugin by default only for its embedded control
// plane on a loopback listener.
package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"taskactions/internal/executor/plugins"
)

// Plugin is the process plugin. Create it with New.
type Plugin struct {
	instance string   // this server process; a state of another is an orphan
	baseEnv  []string // what tasks inherit from the server (PATH, HOME, ...)

	mu      sync.Mutex
	running map[string]*proc // by action UID and attempt
}

// State is the persisted plugin state: enough to recognise the process
// after a restart.
type State struct {
	PID        int
	StartTicks uint64 // the process start time, from /proc, against pid reuse
	Instance   string
}

const stateVersion = 1

type proc struct {
	cmd        *exec.Cmd
	startTicks uint64
	done       chan struct{}
	exit       int // valid after done
}

// inherited are the server's environment variables a task gets.
var inherited = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// New returns the plugin for a server process identified by instance.
func New(instance string) *Plugin {
	var env []string
	for _, k := range inherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &Plugin{instance: instance, baseEnv: env, running: map[string]*proc{}}
}

func key(tc *plugins.TaskContext) string { return tc.UID + "/" + strconv.Itoa(int(tc.Attempt)) }

// Handle starts the process on the first round of an attempt and reports
// its state after.
func (p *Plugin) Handle(_ context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	p.mu.Lock()
	pr := p.running[key(tc)]
	p.mu.Unlock()
	if pr != nil {
		return p.status(pr), nil
	}
	var st State
	if _, ok, err := tc.LoadState(&st); err != nil {
		return plugins.Transition{}, err
	} else if ok {
		// Started by an earlier server process: it died with it (or is
		// killed now); this attempt cannot be watched to its end.
		killOrphan(st)
		return plugins.Transition{Phase: plugins.PhaseSystemRetryableFailure, Info: "process lost",
			Error: &plugins.ExecutionError{Code: "ProcessLost", Message: fmt.Sprintf("pid %d was started by a server process that is gone", st.PID)}}, nil
	}
	return p.start(tc)
}

func (p *Plugin) start(tc *plugins.TaskContext) (plugins.Transition, error) {
	c := tc.Template.Container
	if len(c.Command) == 0 {
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "InvalidSpec", Message: "a process task needs container.command"}}, nil
	}
	suffix := strconv.Itoa(int(tc.Attempt))
	stdout, err := os.Create(filepath.Join(tc.OutputDir, "stdout-"+suffix+".log"))
	if err != nil {
		return plugins.Transition{}, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(tc.OutputDir, "stderr-"+suffix+".log"))
	if err != nil {
		return plugins.Transition{}, err
	}
	defer stderr.Close()

	cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
	cmd.Dir = tc.OutputDir
	cmd.Env = p.env(tc)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		// Not found, not executable: retrying will not help.
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "StartFailed", Message: err.Error()}}, nil
	}
	pr := &proc{cmd: cmd, startTicks: startTicks(cmd.Process.Pid), done: make(chan struct{})}
	p.mu.Lock()
	p.running[key(tc)] = pr
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		pr.exit = cmd.ProcessState.ExitCode()
		close(pr.done)
		if tc.Wake != nil {
			tc.Wake()
		}
	}()
	return plugins.Transition{
		Phase: plugins.PhaseRunning, Version: 1, Info: "pid " + strconv.Itoa(cmd.Process.Pid),
		State: State{PID: cmd.Process.Pid, StartTicks: pr.startTicks, Instance: p.instance}, StateVersion: stateVersion,
	}, nil
}

func (p *Plugin) status(pr *proc) plugins.Transition {
	select {
	case <-pr.done:
	default:
		return plugins.Transition{Phase: plugins.PhaseRunning, Version: 1, Info: "pid " + strconv.Itoa(pr.cmd.Process.Pid)}
	}
	switch pr.exit {
	case 0:
		return plugins.Transition{Phase: plugins.PhaseSuccess, Info: "exit code 0"}
	case -1:
		return plugins.Transition{Phase: plugins.PhaseRetryableFailure, Info: "killed by a signal",
			Error: &plugins.ExecutionError{Code: "Signaled", Message: pr.cmd.ProcessState.String()}}
	}
	code := strconv.Itoa(pr.exit)
	return plugins.Transition{Phase: plugins.PhaseRetryableFailure, Info: "exit code " + code,
		Error: &plugins.ExecutionError{Code: code, Message: "the process exited with code " + code}}
}

// env is the server's basics, then the run's env, then the container's,
// then the action's identity, which always wins.
func (p *Plugin) env(tc *plugins.TaskContext) []string {
	vars := map[string]string{}
	for _, src := range []map[string]string{tc.Env, tc.Template.Container.Env} {
		for k, v := range src {
			vars[k] = v
		}
	}
	for k, v := range map[string]string{
		"TASKACTIONS_URL": tc.ServerURL, "TASKACTIONS_PROJECT": tc.Project, "TASKACTIONS_DOMAIN": tc.Domain,
		"TASKACTIONS_RUN": tc.Run, "TASKACTIONS_ACTION": tc.Action, "TASKACTIONS_ATTEMPT": strconv.Itoa(int(tc.Attempt)),
		"TASKACTIONS_OUTPUT_DIR": tc.OutputDir, "TASKACTIONS_INPUT_URI": tc.InputURI,
	} {
		vars[k] = v
	}
	env := append([]string(nil), p.baseEnv...)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// Abort kills the attempt's process group: SIGTERM, then SIGKILL after a
// grace period.
func (p *Plugin) Abort(ctx context.Context, tc *plugins.TaskContext) error {
	p.mu.Lock()
	pr := p.running[key(tc)]
	p.mu.Unlock()
	if pr == nil {
		var st State
		if _, ok, _ := tc.LoadState(&st); ok {
			killOrphan(st)
		}
		return nil
	}
	return kill(ctx, pr)
}

func kill(ctx context.Context, pr *proc) error {
	pgid := pr.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-pr.done:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	// The leader may be gone while others of its group live on.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	<-pr.done
	return nil
}

// Finalize forgets the attempt (killing it if it still runs).
func (p *Plugin) Finalize(ctx context.Context, tc *plugins.TaskContext) error {
	p.mu.Lock()
	pr := p.running[key(tc)]
	delete(p.running, key(tc))
	p.mu.Unlock()
	if pr != nil {
		return kill(ctx, pr)
	}
	return nil
}

// Shutdown kills every process group this plugin started: nothing
// outlives the server.
func (p *Plugin) Shutdown(ctx context.Context) {
	p.mu.Lock()
	procs := make([]*proc, 0, len(p.running))
	for _, pr := range p.running {
		procs = append(procs, pr)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = kill(ctx, pr) }()
	}
	wg.Wait()
}

// killOrphan kills the group of a process started by an earlier server
// process, if that very process still runs (same pid and start time).
func killOrphan(st State) {
	if st.PID > 0 && st.StartTicks != 0 && startTicks(st.PID) == st.StartTicks {
		_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	}
}
