// Package process is the process plugin: it runs container.command plus
// args as a local process in a process group of its own, with stdout and
// stderr in the log store (files of the action's output dir, bounded).
// Exit 0 succeeds; any other exit is a retryable user failure carrying the
// exit code. Abort, timeout
// and server shutdown kill the whole group, and so does the server's death
// (see starter.go).
//
// Each attempt runs at most once. Its first round starts it held (gate.go):
// the shim waits, running nothing, while the executor stores RUNNING with
// the record of the attempt (a marker the process carries in its
// environment, its pid and start time) in one status write; the next
// round, once that record is stored, lets the command run. When the
// command ends, its exit is recorded in a file before the server can
// learn of it (exitrecord.go). A server that finds the attempt recorded
// and not running here kills whatever carries the marker; it reports the
// recorded exit if there is one, and else the attempt lost (a new
// attempt follows).
//
// Running commands that arrive over HTTP is remote execution by design:
// the server enables this plugin by default only for its embedded control
// plane on a loopback listener, and only callers granted execute may
// enqueue one.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/lifeline"
	"taskactions/internal/logs"
	"taskactions/internal/tracing"
)

// Plugin is the process plugin. Create it with New.
type Plugin struct {
	instance string // this server process; a state of another is an orphan
	logs     *logs.Store
	baseEnv  []string     // what tasks inherit from the server (PATH, HOME, ...)
	confine  *Confinement // nil: commands run as the server does
	slots    slots
	cgroups  cgroups // root "": none
	reaper   reaper  // the fallback without cgroups

	mu      sync.Mutex
	running map[string]*proc // by action UID and attempt
}

// State is the persisted plugin state: enough to recognise the process
// after a restart.
type State struct {
	// Marker is in the environment of everything the attempt starts
	// (TASKACTIONS_ATTEMPT_MARKER): it finds the processes of an attempt
	// whose pid was never recorded.
	Marker string
	// PID and StartTicks are the shim's, started held before the record
	// is stored; StartTicks (the start time, from /proc) guards against
	// pid reuse. Records of earlier versions may lack them.
	PID        int
	StartTicks uint64
	Instance   string
}

// Version 2 records the attempt before its command runs; version 1 (pid
// only) came from servers that started first.
const stateVersion = 2

// markerEnv carries an attempt's marker.
const markerEnv = "TASKACTIONS_ATTEMPT_MARKER"

type proc struct {
	cmd        *exec.Cmd
	marker     string // names its cgroup
	tc         plugins.Interrupted
	startTicks uint64
	gate       *gate // held until the attempt's record is stored
	done       chan struct{}
	exit       int // valid after done
}

// inherited are the server's environment variables a task gets.
var inherited = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// New returns the plugin for a server process identified by instance,
// writing the tasks' stdout and stderr to logs.
func New(instance string, logs *logs.Store) *Plugin {
	var env []string
	for _, k := range inherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &Plugin{instance: instance, logs: logs, baseEnv: env, running: map[string]*proc{}}
}

func key(tc *plugins.TaskContext) string { return tc.UID + "/" + strconv.Itoa(int(tc.Attempt)) }

// Handle starts the attempt held in its first round, lets it run once
// its record is stored, and reports its state after.
func (p *Plugin) Handle(ctx context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	pr := p.proc(tc)
	if pr != nil && !pr.gate.held() {
		return p.status(pr), nil
	}
	var st State
	_, ok, err := tc.LoadState(&st)
	if err != nil {
		return plugins.Transition{}, err
	}
	if pr != nil {
		if ok && st.Instance == p.instance && st.Marker == pr.marker {
			return p.release(pr), nil
		}
		// Its record was not stored (the write failed): it goes, having
		// run nothing, and the state decides as if it never was.
		if err := p.Finalize(ctx, tc); err != nil {
			return plugins.Transition{}, fmt.Errorf("discard a held attempt: %w", err)
		}
	}
	if !ok {
		return p.start(ctx, tc)
	}
	// Recorded, and not running here: the attempt may have run, and must
	// not run again. If it ended, the shim recorded how.
	p.killOrphan(st)
	if code, ok := readExitRecord(tc.OutputDir, st.Marker); ok {
		return exited(code, "exit code "+strconv.Itoa(code)+", recorded before the server that ran it was gone"), nil
	}
	return plugins.Transition{Phase: plugins.PhaseLost, Info: "process lost",
		Error: &plugins.ExecutionError{Code: "ProcessLost", Message: p.lost(st)}}, nil
}

// lost says why a recorded attempt is not running here.
func (p *Plugin) lost(st State) string {
	switch {
	case st.Instance == p.instance:
		// Discarded held: its record's write failed, yet was stored.
		return fmt.Sprintf("pid %d, started by this server process, is gone without recording an exit", st.PID)
	case st.PID == 0:
		return "a server process that is gone was starting it"
	}
	return fmt.Sprintf("pid %d was started by a server process that is gone", st.PID)
}

func (p *Plugin) proc(tc *plugins.TaskContext) *proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[key(tc)]
}

// release lets a held command run, its record stored.
func (p *Plugin) release(pr *proc) plugins.Transition {
	if err := pr.gate.open(); err != nil {
		// The shim is gone, its command never run: another attempt may.
		return plugins.Transition{Phase: plugins.PhaseSystemRetryableFailure, Info: "process gone before it ran",
			Error: &plugins.ExecutionError{Code: "StartFailed", Message: err.Error()}}
	}
	return p.status(pr)
}

// start starts the attempt held, in a slot of its own, under a new
// marker.
func (p *Plugin) start(ctx context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	c := tc.Template.Container
	if len(c.Command) == 0 {
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "InvalidSpec", Message: "a process task needs container.command"}}, nil
	}
	if p.confine != nil && p.confine.Refuse != "" {
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "SandboxUnavailable", Message: p.confine.Refuse}}, nil
	}
	path, err := exec.LookPath(c.Command[0])
	if err != nil {
		// Not found, not executable: retrying will not help.
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "StartFailed", Message: err.Error()}}, nil
	}
	if !p.slots.take(key(tc), tc.Wake) {
		return p.slots.full(), nil
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	st := State{Marker: hex.EncodeToString(b), Instance: p.instance}
	tr, err := p.launch(ctx, tc, st, path, append(c.Command[1:], c.Args...))
	if tr.Phase != plugins.PhaseRunning {
		p.slots.give()
	}
	return tr, err
}

// launch starts the command held (gate.go) in a slot taken for it. When
// the attempt is traced, the process has a span of its own, from its
// start to its exit, and its context is in the process's environment
// (TRACEPARENT), so what the task does (its own spans, its calls to the
// API with that traceparent) is under it.
func (p *Plugin) launch(ctx context.Context, tc *plugins.TaskContext, st State, path string, args []string) (tr plugins.Transition, err error) {
	ctx, span := tracing.Start(ctx, "process", trace.WithAttributes(attribute.String("process.executable.path", path)))
	var pr *proc
	defer func() {
		if pr == nil { // not started: the span ends here
			if err == nil && tr.Error != nil {
				span.SetStatus(codes.Error, tr.Error.Message)
			}
			tracing.End(span, err)
		}
	}()
	cmd, g, release, err := p.prepare(ctx, tc, st, path, args)
	if err != nil {
		if outOfResources(err) {
			return slotWait("waiting for descriptors: " + err.Error()), nil
		}
		return plugins.Transition{}, err
	}
	if p.cgroups.root != "" {
		cg, err := p.cgroups.create(st.Marker)
		if err != nil {
			release()
			return plugins.Transition{}, err
		}
		defer cg.Close() // once started, the process is in it
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
	}
	if err := lifeline.Start(cmd); err != nil {
		release()
		if outOfResources(err) {
			return slotWait("waiting for descriptors: " + err.Error()), nil
		}
		return plugins.Transition{Phase: plugins.PhasePermanentFailure,
			Error: &plugins.ExecutionError{Code: "StartFailed", Message: err.Error()}}, nil
	}
	pr = &proc{cmd: cmd, marker: st.Marker, gate: g, startTicks: startTicks(cmd.Process.Pid), done: make(chan struct{}),
		tc: plugins.Interrupted{Project: tc.Project, Domain: tc.Domain, Run: tc.Run, Action: tc.Action, Attempt: tc.Attempt}}
	p.mu.Lock()
	p.running[key(tc)] = pr
	p.mu.Unlock()
	go p.wait(pr, tc, span, release)
	if err := g.started(); err != nil {
		return plugins.Transition{}, err // the round fails: the executor aborts what it started
	}
	st.PID, st.StartTicks = cmd.Process.Pid, pr.startTicks
	span.SetAttributes(attribute.Int("process.pid", cmd.Process.Pid))
	return plugins.Transition{
		Phase: plugins.PhaseRunning, Version: 1, Info: "pid " + strconv.Itoa(cmd.Process.Pid),
		State: st, StateVersion: stateVersion,
	}, nil
}

// prepare makes an attempt's command: its shim, confined, held at its
// gate, writing to the log store. release frees what it holds, once the
// shim is gone or was never started.
func (p *Plugin) prepare(ctx context.Context, tc *plugins.TaskContext, st State, path string, args []string) (*exec.Cmd, *gate, func(), error) {
	cmd, boxEnv, cleanup, err := p.confined(tc, path, args)
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, stderr, err := p.openLogs(tc)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	g, err := holdOn(cmd)
	if err != nil {
		stdout.Close()
		stderr.Close()
		cleanup()
		return nil, nil, nil, err
	}
	cmd.Dir = tc.OutputDir
	cmd.Env = append(append(append(p.env(tc), tracing.Env(ctx)...), boxEnv...), markerEnv+"="+st.Marker)
	// Through pipes, not the files themselves: the log store bounds them
	// and wakes the streams that follow them. A task's background child
	// that keeps a pipe open does not hold Wait up for long.
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 2 * time.Second
	return cmd, g, func() { g.shut(); stdout.Close(); stderr.Close(); cleanup() }, nil
}

// wait waits for the shim's exit, kills what the attempt left running
// (setsid included), and wakes the executor.
func (p *Plugin) wait(pr *proc, tc *plugins.TaskContext, span trace.Span, release func()) {
	_ = pr.cmd.Wait() // its status is read from ProcessState
	p.cgroups.kill(pr.marker)
	p.sweep(pr.marker)
	release()
	p.slots.give()
	pr.exit = pr.cmd.ProcessState.ExitCode()
	endProcessSpan(span, pr.exit)
	close(pr.done)
	if tc.Wake != nil {
		tc.Wake()
	}
}

// openLogs opens the attempt's stdout and stderr in the log store.
func (p *Plugin) openLogs(tc *plugins.TaskContext) (*logs.Writer, *logs.Writer, error) {
	k := logs.Key{Project: tc.Project, Domain: tc.Domain, Run: tc.Run, Action: tc.Action, Attempt: int(tc.Attempt), Stream: logs.Stdout}
	stdout, err := p.logs.Create(k)
	if err != nil {
		return nil, nil, err
	}
	k.Stream = logs.Stderr
	stderr, err := p.logs.Create(k)
	if err != nil {
		stdout.Close()
		return nil, nil, err
	}
	return stdout, stderr, nil
}

func (p *Plugin) status(pr *proc) plugins.Transition {
	select {
	case <-pr.done:
	default:
		return plugins.Transition{Phase: plugins.PhaseRunning, Version: 1, Info: "pid " + strconv.Itoa(pr.cmd.Process.Pid)}
	}
	if pr.exit == -1 {
		// The shim itself was killed: nothing recorded the command's end.
		return plugins.Transition{Phase: plugins.PhaseRetryableFailure, Info: "killed by a signal",
			Error: &plugins.ExecutionError{Code: "Signaled", Message: pr.cmd.ProcessState.String()}}
	}
	return exited(pr.exit, "exit code "+strconv.Itoa(pr.exit))
}

// exited is the transition of a command that exited with code.
func exited(code int, info string) plugins.Transition {
	if code == 0 {
		return plugins.Transition{Phase: plugins.PhaseSuccess, Info: info}
	}
	msg := "the process exited with code " + strconv.Itoa(code)
	if code > 128 {
		msg += fmt.Sprintf(" (as a shell reports death by signal %d)", code-128)
	}
	return plugins.Transition{Phase: plugins.PhaseRetryableFailure, Info: info,
		Error: &plugins.ExecutionError{Code: strconv.Itoa(code), Message: msg}}
}

// env is the server's basics, then the run's env, then the container's,
// then the action's identity, which always wins. Variables the API would
// refuse (v1.EnvVarProblem), which an object written another way may
// still hold, are dropped.
func (p *Plugin) env(tc *plugins.TaskContext) []string {
	vars := map[string]string{}
	for _, src := range []map[string]string{tc.Env, tc.Template.Container.Env} {
		for k, v := range src {
			if v1.EnvVarProblem(k, v) == "" {
				vars[k] = v
			}
		}
	}
	for k, v := range map[string]string{
		"TASKACTIONS_URL": tc.ServerURL, "TASKACTIONS_PROJECT": tc.Project, "TASKACTIONS_DOMAIN": tc.Domain,
		"TASKACTIONS_RUN": tc.Run, "TASKACTIONS_ACTION": tc.Action, "TASKACTIONS_ATTEMPT": strconv.Itoa(int(tc.Attempt)),
		"TASKACTIONS_OUTPUT_DIR": tc.OutputDir, "TASKACTIONS_INPUT_URI": tc.InputURI, "TASKACTIONS_TOKEN": tc.Token,
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

// endProcessSpan ends the span of a process that exited with code (-1:
// killed, its shim included).
func endProcessSpan(span trace.Span, code int) {
	span.SetAttributes(attribute.Int("process.exit.code", code))
	if code != 0 {
		span.SetStatus(codes.Error, "exit code "+strconv.Itoa(code))
	}
	span.End()
}
