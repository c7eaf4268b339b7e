package taskactions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCheckRequestRefusesReservedKeysAndBadEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   *RunSpec
		tmpl string
		want [][]string // the paths refused, in order
	}{
		{name: "plain keys", rs: &RunSpec{Labels: map[string]string{"team": "ml", "example.com/x": "y"}, Envs: map[string]string{"PATH_EXTRA": "1", "lower": "ok"}}},
		{name: "terminal marker label", rs: &RunSpec{Labels: map[string]string{"flyte.org/terminal-status-recorded": "true"}},
			want: [][]string{{"runSpec", "labels", "flyte.org/terminal-status-recorded"}}},
		{name: "identity label and sub-domain", rs: &RunSpec{Labels: map[string]string{"flyte.org/run": "x", "a.flyte.org/b": "c"}},
			want: [][]string{{"runSpec", "labels", "a.flyte.org/b"}, {"runSpec", "labels", "flyte.org/run"}}},
		{name: "abort reason annotation", rs: &RunSpec{Annotations: map[string]string{"flyte.org/abort-reason": "fake"}},
			want: [][]string{{"runSpec", "annotations", "flyte.org/abort-reason"}}},
		{name: "own domain", rs: &RunSpec{Annotations: map[string]string{"taskactions.io/anything": "x"}},
			want: [][]string{{"runSpec", "annotations", "taskactions.io/anything"}}},
		{name: "not a reserved domain", rs: &RunSpec{Labels: map[string]string{"notflyte.org/x": "y"}}},
		{name: "= in an env name", rs: &RunSpec{Envs: map[string]string{"A=B": "1"}},
			want: [][]string{{"runSpec", "envs", "A=B"}}},
		{name: "identity variable", rs: &RunSpec{Envs: map[string]string{"TASKACTIONS_RUN": "other", "taskactions_token": "x"}},
			want: [][]string{{"runSpec", "envs", "TASKACTIONS_RUN"}, {"runSpec", "envs", "taskactions_token"}}},
		{name: "empty env name and NUL value", rs: &RunSpec{Envs: map[string]string{"": "1", "X": "a\x00b"}},
			want: [][]string{{"runSpec", "envs", ""}, {"runSpec", "envs", "X"}}},
		{name: "container env", tmpl: `{"type":"process","container":{"env":{"TASKACTIONS_URL":"http://evil","OK":"1"}}}`,
			want: [][]string{{"action", "task", "taskTemplate", "container", "env", "TASKACTIONS_URL"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := EnqueueRequest{RunSpec: tc.rs, TaskTemplate: []byte(tc.tmpl)}
			err := checkRequest(req)
			var fields FieldErrors
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &fields) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want FieldErrors (an ErrInvalid)", err)
			}
			var got [][]string
			for _, f := range fields {
				got = append(got, f.Path)
				if f.Detail == "" {
					t.Errorf("%v: no detail", f.Path)
				}
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
				t.Errorf("refused %v, want %v", got, tc.want)
			}
		})
	}
}

// Through the manager: nothing is created, and a run spec label cannot hide
// a run from the run service any more.
func TestEnqueueRefusesReservedLabel(t *testing.T) {
	m := newManager(t, nil)
	run := newRun()
	req := echoRequest(actionOf(run, "a0"), "")
	req.RunSpec = &RunSpec{Labels: map[string]string{"flyte.org/terminal-status-recorded": "true"}}
	_, _, err := m.Enqueue(context.Background(), req)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "flyte.org/terminal-status-recorded") {
		t.Fatalf("got %v, want ErrInvalid naming the label", err)
	}
	if _, err := m.objects.live(context.Background(), actionOf(run, "a0")); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused action exists: %v", err)
	}
}
