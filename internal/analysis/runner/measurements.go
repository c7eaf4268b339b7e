package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/measure"
	"taskactions/internal/analysis/providers"
	"taskactions/internal/analysis/rules"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// refusal is why this runner cannot run ar's metrics, "" when it can:
// a provider it does not have, a job metric where jobs are not allowed
// or whose Job does not map to a process, an argument read from
// elsewhere.
func (r *Runner) refusal(ar *rolloutsapi.AnalysisRun) string {
	for _, a := range ar.Spec.Args {
		if a.Value == nil && a.ValueFrom != nil {
			return fmt.Sprintf("argument %q: valueFrom (a Secret or a field reference) is not supported by this server's analysis runner: give the value", a.Name)
		}
	}
	for _, m := range ar.Spec.Metrics {
		p := m.Provider
		switch {
		case p.Web != nil, p.Prometheus != nil:
		case p.Job != nil && !r.cfg.Jobs:
			return fmt.Sprintf("metric %q: a job metric runs as a local process here, which this server does not allow (--analysis-jobs)", m.Name)
		case p.Job != nil:
			if _, err := providers.JobProcess(m); err != nil {
				return fmt.Sprintf("metric %q: %v", m.Name, err)
			}
		default:
			return fmt.Sprintf("metric %q: its provider is not supported by this server's analysis runner (it measures web, prometheus and job metrics)", m.Name)
		}
	}
	return ""
}

// enqueue enqueues the action of measurement d (idempotent: its name is
// the measurement's).
func (r *Runner) enqueue(ctx context.Context, ar *rolloutsapi.AnalysisRun, d rules.Due) error {
	metric, err := resolved(ar, d.Metric)
	if err != nil {
		return err
	}
	req := taskactions.EnqueueRequest{ID: measurementID(ar, d), Parent: RootAction, ShortName: taskactions.FitShortName(fmt.Sprintf("%s #%d", d.Metric, d.Number))}
	if metric.Provider.Job != nil {
		p, err := providers.JobProcess(metric)
		if err != nil {
			return err // refused before any measurement (refusal)
		}
		req.TaskType, req.MayExecute = "process", true
		req.TaskTemplate, err = json.Marshal(plugins.Template{
			Type: "process", Metadata: plugins.Metadata{Retries: p.Retries, Timeout: timeout(p)},
			Container: plugins.Container{Image: p.Image, Command: p.Argv, Env: p.Env},
		})
		if err != nil {
			return err
		}
	} else {
		req.TaskType = measure.TaskType
		if req.TaskTemplate, err = measure.Template(metric); err != nil {
			return err
		}
	}
	_, _, err = r.cfg.Actions.Enqueue(ctx, req)
	if errors.Is(err, pipeline.ErrConflict) {
		return nil // enqueued before a restart: that one is the measurement
	}
	return err
}

func timeout(p providers.Process) string {
	if p.Deadline <= 0 {
		return ""
	}
	return p.Deadline.String()
}

// outcome is the measurement d's action recorded, and whether it has
// ended; pipeline.ErrNotFound when the action was never enqueued.
func (r *Runner) outcome(ctx context.Context, ar *rolloutsapi.AnalysisRun, d rules.Due) (rolloutsapi.Measurement, bool, error) {
	id := measurementID(ar, d)
	ta, err := r.cfg.Actions.GetTaskAction(ctx, id)
	if err == nil {
		return outcomeOf(ta)
	}
	if !errors.Is(err, pipeline.ErrNotFound) {
		return rolloutsapi.Measurement{}, false, err
	}
	// Gone from the control plane (aborted, retired): history has how it
	// ended, not the value.
	u, err := r.cfg.Actions.Action(ctx, id)
	if err != nil {
		return rolloutsapi.Measurement{}, false, err
	}
	if !u.Phase.Terminal() {
		return rolloutsapi.Measurement{}, false, nil
	}
	why := u.AbortReason
	if u.ErrorState != nil {
		why = u.ErrorState.Message
	}
	now := metav1.Now()
	return rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseError, FinishedAt: &now,
		Message: strings.TrimSpace(fmt.Sprintf("the measurement's action ended %s and is gone: %s", u.Phase, why))}, true, nil
}

// outcomeOf reads a measurement from its action: a web or Prometheus
// measurement from its plugin state; a job's from how its process ended.
func outcomeOf(ta *v1.TaskAction) (rolloutsapi.Measurement, bool, error) {
	phase := v1.PhaseOf(ta.Status.Conditions)
	if !phase.Terminal() {
		return rolloutsapi.Measurement{}, false, nil
	}
	if m, ok := measure.Result(ta); ok {
		return m, true, nil
	}
	now := metav1.Now()
	m := rolloutsapi.Measurement{FinishedAt: &now}
	msg := ""
	if e := ta.Status.ErrorState; e != nil {
		msg = e.Message
	}
	switch {
	case ta.Spec.TaskType == "process" && phase == v1.PhaseSucceeded:
		return providers.JobMeasurement(m, 0, nil), true, nil
	case ta.Spec.TaskType == "process" && phase == v1.PhaseFailed && (ta.Status.ErrorState == nil || ta.Status.ErrorState.Kind == v1.ErrorKindUser):
		m = providers.JobMeasurement(m, 1, nil)
		if msg != "" {
			m.Message = msg
		}
		return m, true, nil
	}
	m.Phase = rolloutsapi.AnalysisPhaseError
	m.Message = strings.TrimSpace(fmt.Sprintf("the measurement's action ended %s %s", phase, msg))
	return m, true, nil
}

// resolved is a metric of ar with its args resolved.
func resolved(ar *rolloutsapi.AnalysisRun, name string) (rolloutsapi.Metric, error) {
	metrics, err := rules.ResolveRunMetrics(ar.Spec.Metrics, ar.Spec.Args)
	if err != nil {
		return rolloutsapi.Metric{}, err
	}
	for _, m := range metrics {
		if m.Name == name {
			return m, nil
		}
	}
	return rolloutsapi.Metric{}, fmt.Errorf("AnalysisRun %s/%s has no metric %q", ar.Namespace, ar.Name, name)
}

// rootTemplate is the root action's task template: the AnalysisRun it
// stands for.
func rootTemplate(ar *rolloutsapi.AnalysisRun) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": RootTaskType, "custom": map[string]any{"analysisRun": ar.Name}})
	return b
}
