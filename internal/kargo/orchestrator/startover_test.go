package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/steps"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// writingPromotions records the orchestrator's writes to a Promotion.
type writingPromotions struct {
	Promotions
	conflict bool
	starts   []int
	statuses []kargoapi.PromotionStatus
}

func (w *writingPromotions) SetStart(_ context.Context, p *kargoapi.Promotion, start int) (*kargoapi.Promotion, error) {
	if w.conflict {
		return nil, pipeline.Errorf(pipeline.ErrConflict, "changed")
	}
	w.starts = append(w.starts, start)
	out := p.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[promotions.StartAnnotation] = strconv.Itoa(start)
	return out, nil
}

func (w *writingPromotions) WriteStatus(_ context.Context, p *kargoapi.Promotion) (*kargoapi.Promotion, error) {
	w.statuses = append(w.statuses, p.Status)
	return p, nil
}

// stepActions holds step actions by name, and records aborts.
type stepActions struct {
	Actions
	phases  map[string]v1.Phase
	aborted []string
}

func (s *stepActions) GetTaskAction(_ context.Context, id taskactions.ActionID) (*v1.TaskAction, error) {
	ph, ok := s.phases[id.Name]
	if !ok {
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "no %s", id.Name)
	}
	cond := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonOf(ph)}
	if ph.Terminal() {
		cond.Type = v1.ConditionSucceeded
	}
	return &v1.TaskAction{Status: v1.TaskActionStatus{Conditions: []metav1.Condition{cond}}}, nil
}

func (s *stepActions) AbortAction(_ context.Context, id taskactions.ActionID, reason string) (taskactions.Action, error) {
	s.aborted = append(s.aborted, id.Name+": "+reason)
	return taskactions.Action{}, nil
}

// A Promotion about to run a step gets its working directory before its
// first step; one whose directory is gone after steps have run starts over
// from its first step, Kargo's way: the step in flight aborted, the start
// raised, the records cleared and status.state kept; the directory is
// made by the round after.
func TestWorkDirStartsOver(t *testing.T) {
	running := kargoapi.StepExecutionMetadata{Alias: "b", Status: kargoapi.PromotionStepStatusRunning}
	done := []kargoapi.StepExecutionMetadata{{Alias: "a", Status: kargoapi.PromotionStepStatusSucceeded}}
	tests := []struct {
		name        string
		start       string // the annotation; "" none
		records     []kargoapi.StepExecutionMetadata
		dirThere    bool
		phases      map[string]v1.Phase
		conflict    bool
		startedOver bool
		wantStarts  []int
		wantAborted []string
		wantDir     bool
	}{
		{name: "first step: the directory is made", wantDir: true},
		{name: "steps have run, the directory is there: on", records: append(done, running), dirThere: true,
			phases: map[string]v1.Phase{"step-2": v1.PhaseRunning}, wantDir: true},
		{name: "the directory is gone, a step in flight: aborted, start 2", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseRunning}, startedOver: true, wantStarts: []int{2},
			wantAborted: []string{"step-2: " + startOverReason}},
		{name: "gone between steps: nothing to abort", records: done, phases: map[string]v1.Phase{"step-1": v1.PhaseSucceeded},
			startedOver: true, wantStarts: []int{2}},
		{name: "the step in flight has ended: not aborted", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseSucceeded}, startedOver: true, wantStarts: []int{2}},
		{name: "the step in flight was never enqueued", records: append(done, running), startedOver: true, wantStarts: []int{2}},
		{name: "gone again in start 2: its step aborted, start 3", start: "2", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseSucceeded, "step-2-start-2": v1.PhaseQueued}, startedOver: true,
			wantStarts: []int{3}, wantAborted: []string{"step-2-start-2: " + startOverReason}},
		{name: "a conflict on the start: nothing more this round", records: done, conflict: true, startedOver: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := promotion(kargoapi.PromotionPhaseRunning, nil)
			if tc.start != "" {
				p.Annotations = map[string]string{promotions.StartAnnotation: tc.start}
			}
			p.Status.StepExecutionMetadata = slices.Clone(tc.records)
			p.Status.CurrentStep = int64(max(len(tc.records)-1, 0))
			p.Status.State = &apiextensionsv1.JSON{Raw: []byte(`{"a":{"x":1}}`)}
			dirs := steps.Dirs{Root: t.TempDir()}
			r := promotions.RunOf(p)
			if tc.dirThere {
				if err := dirs.Make(r.Project, r.Run); err != nil {
					t.Fatal(err)
				}
			}
			promos := &writingPromotions{conflict: tc.conflict}
			acts := &stepActions{phases: tc.phases}
			o := New(Config{Promotions: promos, Actions: acts, WorkDirs: dirs, Log: zerolog.Nop()})

			startedOver, err := o.workDir(context.Background(), p)
			if err != nil || startedOver != tc.startedOver {
				t.Fatalf("workDir = %v, %v; want %v", startedOver, err, tc.startedOver)
			}
			if !slices.Equal(promos.starts, tc.wantStarts) || !slices.Equal(acts.aborted, tc.wantAborted) {
				t.Errorf("starts %v, aborted %q; want %v, %q", promos.starts, acts.aborted, tc.wantStarts, tc.wantAborted)
			}
			if there, _ := dirs.Exists(r.Project, r.Run); there != tc.wantDir {
				t.Errorf("the directory is there: %v, want %v", there, tc.wantDir)
			}
			switch {
			case len(tc.wantStarts) == 0 && len(promos.statuses) > 0:
				t.Errorf("a status was written: %+v", promos.statuses)
			case len(tc.wantStarts) > 0:
				if len(promos.statuses) != 1 {
					t.Fatalf("%d status writes, want one", len(promos.statuses))
				}
				st := promos.statuses[0]
				if st.StepExecutionMetadata != nil || st.CurrentStep != 0 || st.HealthChecks != nil ||
					st.Phase != kargoapi.PromotionPhaseRunning || string(st.State.Raw) != `{"a":{"x":1}}` {
					t.Errorf("status after the start over: %s", fmt.Sprintf("%+v", st))
				}
			}
		})
	}
}
