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

// stepActions holds live step actions by name (an abort reason with
// some), and records aborts.
type stepActions struct {
	Actions
	phases  map[string]v1.Phase
	reasons map[string]string
	aborted []string
}

func (s *stepActions) GetTaskAction(_ context.Context, id taskactions.ActionID) (*v1.TaskAction, error) {
	ph, ok := s.phases[id.Name]
	if !ok {
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "no %s", id.Name)
	}
	cond := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonOf(ph)}
	switch {
	case ph == v1.PhaseSucceeded:
		cond.Type = v1.ConditionSucceeded
	case ph.Terminal():
		cond.Type = v1.ConditionFailed
	}
	ta := &v1.TaskAction{Status: v1.TaskActionStatus{Conditions: []metav1.Condition{cond}}}
	if r := s.reasons[id.Name]; r != "" {
		ta.Annotations = map[string]string{v1.AnnotationAbortReason: r}
	}
	return ta, nil
}

// Action: history holds none of them.
func (s *stepActions) Action(_ context.Context, id taskactions.ActionID) (*taskactions.ActionUpdate, error) {
	return nil, pipeline.Errorf(pipeline.ErrNotFound, "no %s", id.Name)
}

func (s *stepActions) AbortAction(_ context.Context, id taskactions.ActionID, reason string) (taskactions.Action, error) {
	s.aborted = append(s.aborted, id.Name+": "+reason)
	return taskactions.Action{}, nil
}

// What a round does about the working directory, by what it finds.
func TestDirStepOf(t *testing.T) {
	tests := []struct {
		name                               string
		stepsRan, counted, there, underWay bool
		want                               dirStep
	}{
		{"new: made, its start counted", false, false, false, false, dirCount},
		{"new, made before a restart: counted", false, false, true, false, dirCount},
		{"counted, not made yet", false, true, false, false, dirMake},
		{"counted and made: on", false, true, true, false, dirGo},
		{"steps ran, the directory there: on", true, true, true, false, dirGo},
		{"steps ran, the directory gone: start over", true, true, false, false, dirStartOver},
		{"a start over under way, the directory back (a dying step's writes)", true, true, true, true, dirStartOver},
		{"begun under a server that did not count starts: made, no start over", true, false, false, false, dirMake},
		{"begun so, the directory there: on", true, false, true, false, dirGo},
	}
	for _, tc := range tests {
		if got := dirStepOf(tc.stepsRan, tc.counted, tc.there, tc.underWay); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A Promotion about to run a step gets its working directory, its first
// start counted; one whose directory is gone after steps have run starts
// over from its first step, Kargo's way: the step in flight aborted, and
// once it has ended, the start raised, the records cleared and
// status.state kept; the directory is made by the round after.
func TestWorkDirStartsOver(t *testing.T) {
	running := kargoapi.StepExecutionMetadata{Alias: "b", Status: kargoapi.PromotionStepStatusRunning}
	done := []kargoapi.StepExecutionMetadata{{Alias: "a", Status: kargoapi.PromotionStepStatusSucceeded}}
	tests := []struct {
		name        string
		start       string // the annotation; "" none
		records     []kargoapi.StepExecutionMetadata
		dirThere    bool
		phases      map[string]v1.Phase
		reasons     map[string]string
		conflict    bool
		roundEnds   bool
		wantStarts  []int
		wantAborted []string
		wantReset   bool
		wantDir     bool
	}{
		{name: "first step: the directory made, start 1 counted", roundEnds: true, wantStarts: []int{1}, wantDir: true},
		{name: "counted: the directory made, on", start: "1", wantDir: true},
		{name: "steps have run, the directory is there: on", start: "1", records: append(done, running), dirThere: true,
			phases: map[string]v1.Phase{"step-2": v1.PhaseRunning}, wantDir: true},
		{name: "the directory is gone, a step in flight: aborted, nothing more until it ends", start: "1", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseRunning}, roundEnds: true,
			wantAborted: []string{"step-2: " + startOverReason}},
		{name: "the aborted step has ended: start 2", start: "1", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseAborted}, reasons: map[string]string{"step-2": startOverReason},
			roundEnds: true, wantStarts: []int{2}, wantReset: true},
		{name: "the aborted step has ended, the directory back: start 2, the directory gone", start: "1", records: append(done, running),
			dirThere: true, phases: map[string]v1.Phase{"step-2": v1.PhaseAborted}, reasons: map[string]string{"step-2": startOverReason},
			roundEnds: true, wantStarts: []int{2}, wantReset: true},
		{name: "a step aborted by its user, the directory there: on", start: "1", records: append(done, running), dirThere: true,
			phases: map[string]v1.Phase{"step-2": v1.PhaseAborted}, reasons: map[string]string{"step-2": "Promotion aborted"}, wantDir: true},
		{name: "gone between steps: start 2 at once", start: "1", records: done, phases: map[string]v1.Phase{"step-1": v1.PhaseSucceeded},
			roundEnds: true, wantStarts: []int{2}, wantReset: true},
		{name: "the step in flight was never enqueued: start 2 at once", start: "1", records: append(done, running),
			roundEnds: true, wantStarts: []int{2}, wantReset: true},
		{name: "gone again in start 2: its step aborted", start: "2", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseSucceeded, "step-2-start-2": v1.PhaseQueued}, roundEnds: true,
			wantAborted: []string{"step-2-start-2: " + startOverReason}},
		{name: "begun uncounted, the directory missing: made, on", records: append(done, running),
			phases: map[string]v1.Phase{"step-2": v1.PhaseRunning}, wantDir: true},
		{name: "a conflict on the start: nothing more this round", start: "1", records: done, conflict: true, roundEnds: true},
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
			acts := &stepActions{phases: tc.phases, reasons: tc.reasons}
			o := New(Config{Promotions: promos, Actions: acts, WorkDirs: dirs, Log: zerolog.Nop()})

			roundEnds, err := o.workDir(context.Background(), p)
			if err != nil || roundEnds != tc.roundEnds {
				t.Fatalf("workDir = %v, %v; want %v", roundEnds, err, tc.roundEnds)
			}
			if !slices.Equal(promos.starts, tc.wantStarts) || !slices.Equal(acts.aborted, tc.wantAborted) {
				t.Errorf("starts %v, aborted %q; want %v, %q", promos.starts, acts.aborted, tc.wantStarts, tc.wantAborted)
			}
			if there, _ := dirs.Exists(r.Project, r.Run); there != tc.wantDir {
				t.Errorf("the directory is there: %v, want %v", there, tc.wantDir)
			}
			switch {
			case !tc.wantReset && len(promos.statuses) > 0:
				t.Errorf("a status was written: %+v", promos.statuses)
			case tc.wantReset:
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
