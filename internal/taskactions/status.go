package taskactions

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
)

// UpdateStatus applies mutate to a copy of the action and writes the status
// subresource, retrying on conflict with a fresh read. The first attempt
// starts from the cache; a conflict means the cache was behind, so retries
// read from the API server. mutate may return ErrNoChange, or an error
// that ends the update (ErrConflict for a domain rule).
func (m *Manager) UpdateStatus(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	return m.objects.update(ctx, id, mutate, func(ta *v1.TaskAction) (*v1.TaskAction, error) {
		boundStatus(&ta.Status)
		ta.Status.Phase = v1.PhaseOfAction(ta)
		ta.Status.StateJSON = stateJSON(ta)
		out, err := m.cfg.Client.FlyteV1().TaskActions(ta.Namespace).UpdateStatus(ctx, ta, metav1.UpdateOptions{})
		if err == nil && ta.Status.Phase.Terminal() {
			failpoint.Hit(failpoint.TerminalWritten)
		}
		return out, err
	})
}

// UpdateMeta is UpdateStatus for the object itself (finalizers, labels).
func (m *Manager) UpdateMeta(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	return m.objects.update(ctx, id, mutate, func(ta *v1.TaskAction) (*v1.TaskAction, error) {
		return m.cfg.Client.FlyteV1().TaskActions(ta.Namespace).Update(ctx, ta, metav1.UpdateOptions{})
	})
}

// stateJSON is the status as the run service is told it (phase, attempt,
// cache status, error): the seed's StateJSON, kept on every status write.
func stateJSON(ta *v1.TaskAction) string {
	b, _ := json.Marshal(struct {
		Phase       v1.Phase       `json:"phase"`
		Attempts    uint32         `json:"attempts"`
		CacheStatus string         `json:"cacheStatus"`
		Error       *v1.ErrorState `json:"error,omitempty"`
	}{v1.PhaseOfAction(ta), ta.Status.Attempts, ta.Status.CacheStatus.String(), ta.Status.ErrorState})
	return string(b)
}

// StatusUpdate is what an executor reports through PutStatus.
type StatusUpdate struct {
	Phase       v1.Phase
	CacheStatus *v1.CatalogCacheStatus
	Message     string
	Error       *v1.ErrorState
}

// PutStatus records an attempt's status, as an executor outside the
// server reports it: phase (as conditions, with a phase-history entry when
// the phase or attempt changes), attempts, cache status and error state.
// It refuses (ErrConflict) an attempt below the recorded one, one that
// skips attempts (the next is the recorded one plus one), any move of the
// attempt of an action the built-in executor runs (its attempts are its
// own: a higher one would make it kill and restart the command), and any
// change out of a terminal phase; reporting the same terminal phase again
// is a no-op, so reporters can retry.
func (m *Manager) PutStatus(ctx context.Context, id ActionID, attempt uint32, st StatusUpdate) (*v1.TaskAction, error) {
	if attempt < 1 {
		return nil, fmt.Errorf("attempt must be at least 1: %w", ErrInvalid)
	}
	if !st.Phase.Valid() || st.Phase == v1.PhaseUnspecified {
		return nil, FieldErrors{{Path: []string{"status", "phase"}, Detail: fmt.Sprintf("%q is not a phase an executor reports", st.Phase)}}
	}
	return m.UpdateStatus(ctx, id, func(ta *v1.TaskAction) error {
		cur := v1.PhaseOf(ta.Status.Conditions)
		switch {
		case cur.Terminal() && cur == st.Phase && attempt == ta.Status.Attempts:
			return ErrNoChange
		case cur.Terminal():
			return fmt.Errorf("action is %s, a terminal phase: %w", cur, ErrConflict)
		}
		if err := m.cfg.attemptReported(ta, attempt); err != nil {
			return err
		}
		newAttempt := attempt != ta.Status.Attempts
		ta.Status.Attempts = attempt
		if st.CacheStatus != nil {
			ta.Status.CacheStatus = *st.CacheStatus
		}
		if st.Error != nil {
			ta.Status.ErrorState = st.Error.DeepCopy()
		}
		m.cfg.setPhase(ta, v1.PhaseChange{Phase: st.Phase, Reason: v1.ReasonOf(st.Phase), Message: st.Message, NewAttempt: newAttempt})
		return nil
	})
}

// attemptReported checks the attempt of a report from outside against
// the recorded one.
func (cfg *Config) attemptReported(ta *v1.TaskAction, attempt uint32) error {
	rec := ta.Status.Attempts
	switch {
	case cfg.runsBuiltIn(ta.Spec.TaskType) && attempt != rec:
		if rec == 0 {
			return fmt.Errorf("actions of task type %q are run by this server's executor, whose attempts are its own: it has not started attempt 1 yet, so attempt %d cannot be reported: %w", ta.Spec.TaskType, attempt, ErrConflict)
		}
		return fmt.Errorf("actions of task type %q are run by this server's executor, whose attempts are its own: attempt %d is not its current attempt %d: %w", ta.Spec.TaskType, attempt, rec, ErrConflict)
	case attempt < rec:
		return fmt.Errorf("attempt %d is older than the recorded attempt %d: %w", attempt, rec, ErrConflict)
	case attempt > rec+1:
		return fmt.Errorf("attempt %d skips attempts: the recorded attempt is %d, so the next is %d: %w", attempt, rec, rec+1, ErrConflict)
	}
	return nil
}

// RunsBuiltIn reports whether this server's executor runs actions of the
// task type (Config.BuiltIn).
func (m *Manager) RunsBuiltIn(taskType string) bool { return m.cfg.runsBuiltIn(taskType) }

func (cfg *Config) runsBuiltIn(taskType string) bool {
	return cfg.BuiltIn != nil && cfg.BuiltIn(taskType)
}

// setPhase is v1.SetPhase with the manager's clock and history limit.
func (cfg *Config) setPhase(ta *v1.TaskAction, c v1.PhaseChange) {
	c.At, c.HistoryLimit = cfg.Now(), cfg.HistoryLimit
	v1.SetPhase(ta, c)
}
