// Package plugins is the interface between the executor and what actually
// runs a task, in the spirit of Flyte's plugin machinery: the executor
// calls Handle every round until the returned transition is terminal,
// Abort when the action is aborted or times out, and Finalize once it is
// over. A plugin keeps its own state (gob-encoded, versioned); the
// executor persists it on the TaskAction every round, so a restarted
// server resumes where the last one was.
package plugins

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"time"
)

// Plugin runs tasks of one type.
type Plugin interface {
	// Handle advances the task one round. It must be idempotent for a
	// given action UID and attempt: a round may be repeated.
	Handle(ctx context.Context, tc *TaskContext) (Transition, error)
	// Abort stops whatever runs for the attempt (kills processes).
	Abort(ctx context.Context, tc *TaskContext) error
	// Finalize releases what the attempt holds, after it ended.
	Finalize(ctx context.Context, tc *TaskContext) error
}

// HoldsNothing is a plugin whose attempts hold nothing between or after
// rounds (no process, connection or file): an action of it deleted midway
// leaves nothing to clean up, so its actions carry no finalizer, which
// saves two writes per action (adding and removing it).
type HoldsNothing interface{ HoldsNothing() }

// Swept is a plugin whose attempts hold something only while the server
// that ran them lives, and which, at its start, ended all an earlier server
// left (the process plugin with cgroups or as a subreaper). Its actions
// need no finalizer when SweptAtStart says so, which saves a write per
// action (its removal; it is added at creation): the executor releases
// the attempt of an action deleted while it runs when it sees the
// deletion, and one deleted while no server ran lost what it held with
// the server that ran it, and the sweep at the next start ended what
// outlived it.
type Swept interface{ SweptAtStart() bool }

// NeedsFinalizer reports whether actions of the plugin need the executor's
// finalizer: deletion must then wait for the plugin's cleanup.
func NeedsFinalizer(p Plugin) bool {
	if _, ok := p.(HoldsNothing); ok {
		return false
	}
	s, ok := p.(Swept)
	return !ok || !s.SweptAtStart()
}

// Stopper is a plugin that keeps something running between rounds (a
// process). When the executor stops, Shutdown ends all of it and returns
// the attempts it cut short, which the executor records as interrupted:
// a graceful stop is not the task's failure, nor the system's.
type Stopper interface {
	Shutdown(ctx context.Context) []Interrupted
}

// Interrupted names an attempt a Shutdown ended before it finished.
type Interrupted struct {
	Project, Domain, Run, Action string
	Attempt                      uint32
}

// Phase is where a plugin is with a task.
type Phase int

// Phases a transition can report.
const (
	PhaseInitializing           Phase = iota // preparing; call again
	PhaseRunning                             // running; call again (after RequeueAfter, or when woken)
	PhaseSuccess                             // done
	PhaseRetryableFailure                    // the task failed; a new attempt may succeed (user error)
	PhasePermanentFailure                    // the task failed for good
	PhaseSystemRetryableFailure              // the system failed it; retry
	// PhaseLost: the attempt was lost with the server process that ran
	// it (killed, crashed). It is retried and counted as a system failure,
	// but never ends the action by itself: the limit on system failures is
	// for what the system may fail at again, and a server's death is not
	// the task's (docs/executor.md, Attempts).
	PhaseLost
)

var phaseNames = [...]string{"Initializing", "Running", "Success", "RetryableFailure", "PermanentFailure", "SystemRetryableFailure", "Lost"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// ExecutionError is a task's failure.
type ExecutionError struct {
	Code    string
	Message string
}

// Transition is the result of a round.
type Transition struct {
	Phase Phase
	// Version distinguishes successive reports of the same phase (the
	// seed's PluginPhaseVersion).
	Version uint32
	// Info says what happens, for people ("pid 4242").
	Info  string
	Error *ExecutionError
	// RequeueAfter asks for the next round after this long; zero means
	// only when woken (or at the executor's resync).
	RequeueAfter time.Duration
	// State, when not nil, replaces the plugin state (gob-encoded with
	// StateVersion).
	State        any
	StateVersion uint8
	// Outputs, on success, are written to the action's output dir as
	// outputs.json.
	Outputs any
}

// Template is the task template, as the API takes it.
type Template struct {
	Type      string         `json:"type"`
	Metadata  Metadata       `json:"metadata"`
	Container Container      `json:"container"`
	Custom    map[string]any `json:"custom,omitempty"`
}

// Metadata of a template.
type Metadata struct {
	Retries       int    `json:"retries"`
	Timeout       string `json:"timeout,omitempty"`
	Cacheable     bool   `json:"cacheable"`
	CacheVersion  string `json:"cacheVersion,omitempty"`
	Interruptible bool   `json:"interruptible"`
}

// Container says what a process task runs.
type Container struct {
	Image   string            `json:"image,omitempty"`
	Command []string          `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// TaskContext is what a plugin knows of the action it runs.
type TaskContext struct {
	Project, Domain, Run, Action string
	Parent                       string // the parent action's name; "" for a run's root
	UID                          string
	Attempt                      uint32
	Template                     Template
	// Env is the run's environment (spec.envVars).
	Env       map[string]string
	InputURI  string
	OutputDir string // a directory of the action's own, created by the executor
	ServerURL string // this server's API, for tasks that call back
	Token     string // a bearer token for this attempt, within the action's run
	// Wake asks the executor for another round now (a process exited).
	Wake func()

	state        []byte
	stateVersion uint8
}

// WithState returns the context carrying a persisted plugin state.
func (tc TaskContext) WithState(version uint8, state []byte) *TaskContext {
	tc.state, tc.stateVersion = state, version
	return &tc
}

// LoadState decodes the plugin state into v. ok is false when there is
// none (the first round of an attempt).
func (tc *TaskContext) LoadState(v any) (version uint8, ok bool, err error) {
	if len(tc.state) == 0 {
		return 0, false, nil
	}
	if err := DecodeState(tc.state, v); err != nil {
		return tc.stateVersion, false, err
	}
	return tc.stateVersion, true, nil
}

// DecodeState decodes a plugin state EncodeState made (as the executor
// persisted it on the TaskAction) into v.
func DecodeState(state []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(state)).Decode(v); err != nil {
		return fmt.Errorf("decode plugin state: %w", err)
	}
	return nil
}

// EncodeState gob-encodes a plugin state.
func EncodeState(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("encode plugin state: %w", err)
	}
	return b.Bytes(), nil
}
