package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

func promotion(phase kargoapi.PromotionPhase, annotations map[string]string) *kargoapi.Promotion {
	return &kargoapi.Promotion{
		ObjectMeta: metav1.ObjectMeta{Name: "s.01j00000000000000000000000.abc1234", Namespace: "p", Annotations: annotations},
		Spec:       kargoapi.PromotionSpec{Stage: "s", Freight: "abc1234"},
		Status:     kargoapi.PromotionStatus{Phase: phase},
	}
}

func stageWithCurrent(name string) *kargoapi.Stage {
	st := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "p"}}
	if name != "" {
		st.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: name}
	}
	return st
}

func TestRoundOf(t *testing.T) {
	p := promotion("", nil)
	abort := map[string]string{kargoapi.AnnotationKeyAbort: `{"action":"terminate"}`}
	tests := []struct {
		name  string
		promo *kargoapi.Promotion
		stage *kargoapi.Stage
		want  round
	}{
		{"terminal: nothing, even without its Stage", promotion(kargoapi.PromotionPhaseSucceeded, nil), nil, roundWait},
		{"its Stage is gone", promotion(kargoapi.PromotionPhaseRunning, nil), nil, roundNoStage},
		{"new: accepted whatever the queue", promotion("", nil), stageWithCurrent("other"), roundAccept},
		{"new and aborted: accepted first", promotion("", abort), stageWithCurrent(""), roundAccept},
		{"pending, queued behind another", promotion(kargoapi.PromotionPhasePending, nil), stageWithCurrent("other"), roundWait},
		{"pending, the Stage holds the queue", promotion(kargoapi.PromotionPhasePending, nil), stageWithCurrent(""), roundWait},
		{"pending and aborted: aborted while queued", promotion(kargoapi.PromotionPhasePending, abort), stageWithCurrent("other"), roundAbort},
		{"the Stage's current one", promotion(kargoapi.PromotionPhasePending, nil), stageWithCurrent(p.Name), roundRun},
		{"running, the Stage's current one", promotion(kargoapi.PromotionPhaseRunning, nil), stageWithCurrent(p.Name), roundRun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := roundOf(tc.promo, tc.stage); got != tc.want {
				t.Errorf("roundOf = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCollectionAfter(t *testing.T) {
	origin := func(name string) kargoapi.FreightOrigin {
		return kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: name}
	}
	ref := func(name, warehouse string) kargoapi.FreightReference {
		return kargoapi.FreightReference{Name: name, Origin: origin(warehouse)}
	}
	withCurrent := func(refs ...kargoapi.FreightReference) *kargoapi.Stage {
		st := stageWithCurrent("")
		fc := kargoapi.FreightCollection{}
		fc.UpdateOrPush(refs...)
		st.Status.FreightHistory.Record(&fc)
		return st
	}
	tests := []struct {
		name  string
		stage *kargoapi.Stage
		ref   kargoapi.FreightReference
		want  []string // Freight names in the collection
	}{
		{"no current Freight", stageWithCurrent(""), ref("new", "a"), []string{"new"}},
		{"the same origin is replaced", withCurrent(ref("old", "a")), ref("new", "a"), []string{"new"}},
		{"other origins stay", withCurrent(ref("old", "a"), ref("other", "b")), ref("new", "a"), []string{"new", "other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range collectionAfter(tc.stage, tc.ref).References() {
				got = append(got, r.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Freight %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContextOf(t *testing.T) {
	p := promotion(kargoapi.PromotionPhaseRunning, map[string]string{kargoapi.AnnotationKeyCreateActor: "email:ada@example.com"})
	origin := kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"}
	p.Status.Freight = &kargoapi.FreightReference{Name: "abc1234", Origin: origin}
	want := engine.Context{Project: "p", Promotion: p.Name, Stage: "s", Actor: "email:ada@example.com",
		TargetFreight: engine.FreightRef{Name: "abc1234", Origin: origin}}
	if got := contextOf(p); got != want {
		t.Errorf("contextOf = %+v, want %+v", got, want)
	}
	// Before it is accepted, the origin is not known yet.
	p.Status.Freight = nil
	want.TargetFreight.Origin = kargoapi.FreightOrigin{}
	if got := contextOf(p); got != want {
		t.Errorf("contextOf (not accepted) = %+v, want %+v", got, want)
	}
}

func TestRecordOf(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	runs := func(taskType string) bool { return taskType == "http" }
	tests := []struct {
		name     string
		d        engine.Decision
		runnable func(string) bool
		want     kargoapi.PromotionStepStatus // "" = no record
		message  string
		finished bool
	}{
		{name: "skip", d: engine.Decision{Alias: "a", Skip: true, SkipReason: "why"},
			want: kargoapi.PromotionStepStatusSkipped, message: "why", finished: true},
		{name: "errored", d: engine.Decision{Alias: "a", Errored: true, Error: "bad if"},
			want: kargoapi.PromotionStepStatusErrored, message: "bad if", finished: true},
		{name: "run", d: engine.Decision{Alias: "a", Run: true, Uses: "http"}, runnable: runs,
			want: kargoapi.PromotionStepStatusRunning},
		{name: "run, any type when nothing says", d: engine.Decision{Alias: "a", Run: true, Uses: "git-clone"},
			want: kargoapi.PromotionStepStatusRunning},
		{name: "run, no plugin runs it", d: engine.Decision{Alias: "a", Run: true, Uses: "git-clone"}, runnable: runs,
			want: kargoapi.PromotionStepStatusErrored, message: `no promotion step runner found for kind "git-clone"`, finished: true},
		{name: "waiting", d: engine.Decision{Waiting: true}},
		{name: "finished", d: engine.Decision{Finished: true, Phase: kargoapi.PromotionPhaseSucceeded}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := recordOf(tc.d, tc.runnable, now)
			if ok != (tc.want != "") {
				t.Fatalf("recorded %v, want %v", ok, tc.want != "")
			}
			if !ok {
				return
			}
			if r.Alias != "a" || r.Status != tc.want || r.Message != tc.message {
				t.Errorf("record %+v, want %s %q", r, tc.want, tc.message)
			}
			if r.StartedAt == nil || !r.StartedAt.Equal(now) || (r.FinishedAt != nil) != tc.finished {
				t.Errorf("started %v, finished %v; want started now, finished %v", r.StartedAt, r.FinishedAt, tc.finished)
			}
		})
	}
}

// action is a step's child action in phase after attempts.
func action(phase v1.Phase, attempts uint32, errMsg, abortReason string) *taskactions.Action {
	a := &taskactions.Action{Phase: phase, Attempts: attempts, AbortReason: abortReason}
	if errMsg != "" {
		a.ErrorState = &v1.ErrorState{Kind: v1.ErrorKindUser, Message: errMsg}
	}
	return a
}

func TestStepEnd(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	started := now.Add(-time.Minute)
	threshold3 := kargoapi.PromotionStep{Uses: "http", Retry: &kargoapi.PromotionStepRetry{ErrorThreshold: 3}}
	tests := []struct {
		name       string
		step       kargoapi.PromotionStep
		ta         *taskactions.Action
		ended      bool
		status     kargoapi.PromotionStepStatus
		message    string
		errorCount uint32
	}{
		{name: "still running", ta: action(v1.PhaseRunning, 1, "", "")},
		{name: "succeeded after a retry: the count resets", ta: action(v1.PhaseSucceeded, 2, "", ""),
			ended: true, status: kargoapi.PromotionStepStatusSucceeded},
		{name: "recovered", ta: action(v1.PhaseRecovered, 1, "", ""),
			ended: true, status: kargoapi.PromotionStepStatusSucceeded, errorCount: 1},
		{name: "failed", ta: action(v1.PhaseFailed, 1, "exit 1", ""),
			ended: true, status: kargoapi.PromotionStepStatusFailed, message: "exit 1", errorCount: 1},
		{name: "failed, the threshold spent", step: threshold3, ta: action(v1.PhaseFailed, 3, "exit 1", ""),
			ended: true, status: kargoapi.PromotionStepStatusErrored, message: `step "a" met error threshold of 3: exit 1`, errorCount: 3},
		{name: "aborted: the abort's reason, not the error", ta: action(v1.PhaseAborted, 1, "killed", "Promotion aborted"),
			ended: true, status: kargoapi.PromotionStepStatusAborted, message: "Promotion aborted", errorCount: 1},
		{name: "timed out", ta: action(v1.PhaseTimedOut, 1, "", ""),
			ended: true, status: kargoapi.PromotionStepStatusErrored, message: `step "a" timed out`, errorCount: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := engine.StepRecord{Alias: "a", Status: kargoapi.PromotionStepStatusRunning, StartedAt: &started}
			r, ended := stepEnd(tc.step, in, tc.ta, now)
			if ended != tc.ended {
				t.Fatalf("ended %v, want %v", ended, tc.ended)
			}
			if !ended {
				if !reflect.DeepEqual(r, in) {
					t.Errorf("a running step's record changed: %+v", r)
				}
				return
			}
			if r.Status != tc.status || r.Message != tc.message || r.ErrorCount != tc.errorCount {
				t.Errorf("record %s %q errorCount %d, want %s %q %d", r.Status, r.Message, r.ErrorCount, tc.status, tc.message, tc.errorCount)
			}
			if r.FinishedAt == nil || !r.FinishedAt.Equal(now) || r.StartedAt != &started {
				t.Errorf("started %v finished %v, want the start kept and finished now", r.StartedAt, r.FinishedAt)
			}
		})
	}
}

func TestRunEnd(t *testing.T) {
	tests := []struct {
		phase kargoapi.PromotionPhase
		want  *taskactions.StatusUpdate // nil: nothing to write
	}{
		{kargoapi.PromotionPhaseSucceeded, &taskactions.StatusUpdate{Phase: v1.PhaseSucceeded}},
		{kargoapi.PromotionPhaseFailed, &taskactions.StatusUpdate{Phase: v1.PhaseFailed,
			Error: &v1.ErrorState{Kind: v1.ErrorKindUser, Message: "why"}}},
		{kargoapi.PromotionPhaseErrored, &taskactions.StatusUpdate{Phase: v1.PhaseFailed,
			Error: &v1.ErrorState{Kind: v1.ErrorKindUser, Message: "why"}}},
		{kargoapi.PromotionPhaseAborted, nil},
	}
	for _, tc := range tests {
		got, ok := runEnd(tc.phase, "why")
		if ok != (tc.want != nil) || (ok && !reflect.DeepEqual(got, *tc.want)) {
			t.Errorf("%s: runEnd = %+v, %v; want %+v", tc.phase, got, ok, tc.want)
		}
	}
}

func TestTemplates(t *testing.T) {
	decode := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	root := decode(rootTemplate(promotion("", nil)))
	wantRoot := map[string]any{"type": "kargo-promotion",
		"custom": map[string]any{"promotion": "s.01j00000000000000000000000.abc1234", "stage": "s"}}
	if !reflect.DeepEqual(root, wantRoot) {
		t.Errorf("root template %v, want %v", root, wantRoot)
	}
	tests := []struct {
		name string
		d    engine.Decision
		want map[string]any
	}{
		{"no retry", engine.Decision{Uses: "http", Config: map[string]any{"url": "http://x"}},
			map[string]any{"type": "http", "metadata": map[string]any{"retries": 0.0}, "custom": map[string]any{"url": "http://x"}}},
		{"retries and a timeout", engine.Decision{Uses: "http", Retries: 2, Timeout: 90 * time.Second},
			map[string]any{"type": "http", "metadata": map[string]any{"retries": 2.0, "timeout": "1m30s"}, "custom": nil}},
	}
	for _, tc := range tests {
		b, err := stepTemplate(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if got := decode(b); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: step template %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := stepTemplate(engine.Decision{Uses: "http", Config: map[string]any{"f": func() {}}}); err == nil {
		t.Error("a config that cannot be encoded: no error")
	}
}

func TestUnrunnable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{pipeline.Errorf(pipeline.ErrInvalid, "spec.x: Invalid value"), true},
		{fmt.Errorf("enqueue: %w", pipeline.Errorf(pipeline.ErrTooLarge, "too large")), true},
		{pipeline.Errorf(pipeline.ErrConflict, "exists"), false},
		{errors.New("connection refused"), false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := unrunnable(tc.err); got != tc.want {
			t.Errorf("unrunnable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
