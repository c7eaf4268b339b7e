package orchestrator

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/engine"
)

// records are the steps decided so far, from the Promotion's status: its
// step metadata, and the outputs kept in status.state by alias.
func records(p *kargoapi.Promotion) []engine.StepRecord {
	state := p.Status.GetState()
	out := make([]engine.StepRecord, len(p.Status.StepExecutionMetadata))
	for i, md := range p.Status.StepExecutionMetadata {
		out[i] = engine.StepRecord{
			Alias: md.Alias, Status: md.Status, Message: md.Message, ErrorCount: md.ErrorCount,
			StartedAt: timeOf(md.StartedAt), FinishedAt: timeOf(md.FinishedAt),
		}
		if o, ok := state[md.Alias].(map[string]any); ok {
			out[i].Outputs = o
		}
	}
	return out
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

// setRecord writes step i's record into the status (appending when it is
// the next one), its outputs into status.state.
func setRecord(st *kargoapi.PromotionStatus, i int, r engine.StepRecord, continueOnError bool) {
	md := kargoapi.StepExecutionMetadata{
		Alias: r.Alias, Status: r.Status, Message: r.Message, ErrorCount: r.ErrorCount,
		ContinueOnError: continueOnError,
	}
	if r.StartedAt != nil {
		md.StartedAt = &metav1.Time{Time: *r.StartedAt}
	}
	if r.FinishedAt != nil {
		md.FinishedAt = &metav1.Time{Time: *r.FinishedAt}
	}
	if i < len(st.StepExecutionMetadata) {
		st.StepExecutionMetadata[i] = md
	} else {
		st.StepExecutionMetadata = append(st.StepExecutionMetadata, md)
	}
	st.CurrentStep = int64(i)
	if r.Outputs != nil {
		state := st.GetState()
		if state == nil {
			state = map[string]any{}
		}
		state[r.Alias] = r.Outputs
		raw, _ := json.Marshal(state)
		st.State = &apiextensionsv1.JSON{Raw: raw}
	}
}

// errNoOutputs: a step's action succeeded and its output dir here has no
// outputs.json. The executor writes one for every action that succeeds
// ("{}" when it has none), so the action ran on another replica's
// executor, whose disk holds the file: that replica stopped before the
// step's end was recorded, and the Lease moved here.
var errNoOutputs = errors.New("no outputs.json on this replica's disk: another replica ran the step and stopped before its end was recorded")

// readOutputs reads what a step action's plugin wrote as outputs.json:
// a JSON object as it is, anything else as {"value": <the text>}; no file
// is errNoOutputs.
func readOutputs(dir string) (map[string]any, error) {
	b, err := readRegular(filepath.Join(dir, "outputs.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoOutputs
	}
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{"value": string(b)}, nil
	}
	return out, nil
}

// readRegular reads a file without following a symlink: an output dir
// may hold what a task put there.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
