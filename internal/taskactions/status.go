package taskactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
)

// ErrNoChange, returned by a mutate function, ends UpdateStatus without a
// write.
var ErrNoChange = errors.New("no change")

// UpdateStatus applies mutate to a copy of the action and writes the status
// subresource, retrying on conflict with a fresh read. The first attempt
// starts from the cache; a conflict means the cache was behind, so retries
// read from the API server. mutate may return ErrNoChange, or an error
// that ends the update (ErrConflict for a domain rule).
func (m *Manager) UpdateStatus(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	return m.update(ctx, id, mutate, func(ta *v1.TaskAction) (*v1.TaskAction, error) {
		boundStatus(&ta.Status)
		ta.Status.Phase = v1.PhaseOfAction(ta)
		ta.Status.StateJSON = stateJSON(ta)
		out, err := m.client.FlyteV1().TaskActions(ta.Namespace).UpdateStatus(ctx, ta, metav1.UpdateOptions{})
		if err == nil && ta.Status.Phase.Terminal() {
			failpoint.Hit(failpoint.TerminalWritten)
		}
		return out, err
	})
}

// UpdateMeta is UpdateStatus for the object itself (finalizers, labels).
func (m *Manager) UpdateMeta(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	return m.update(ctx, id, mutate, func(ta *v1.TaskAction) (*v1.TaskAction, error) {
		return m.client.FlyteV1().TaskActions(ta.Namespace).Update(ctx, ta, metav1.UpdateOptions{})
	})
}

func (m *Manager) update(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error, write func(*v1.TaskAction) (*v1.TaskAction, error)) (*v1.TaskAction, error) {
	var out *v1.TaskAction
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := m.current(ctx, id, first)
		first = false
		if err != nil {
			return err
		}
		ta := cur.DeepCopy()
		if err := mutate(ta); err != nil {
			if errors.Is(err, ErrNoChange) {
				out = cur
				return nil
			}
			return err
		}
		out, err = write(ta)
		return err
	})
	if err != nil {
		switch {
		case apierrors.IsNotFound(err), errors.Is(err, ErrNotFound):
			return nil, m.gone(ctx, id)
		case isTooLarge(err):
			return nil, fmt.Errorf("action %s is too large to record a change in (delete it): %w", id, ErrTooLarge)
		}
		return nil, err
	}
	m.actions.Wrote(out)
	return out, nil
}

// current is the action to update: the cached copy on a first attempt,
// else the API server's. The cached copy is read once it holds this
// server's own writes of the action: a client that reports twice in a row
// would otherwise have its second write refused and retried, and one that
// reports right after creating the action would make a read.
func (m *Manager) current(ctx context.Context, id ActionID, fromCache bool) (*v1.TaskAction, error) {
	if fromCache {
		ta, err := m.cached(id)
		switch {
		case err != nil:
		case ta == nil: // perhaps created here a moment ago
			m.actions.CatchUp(ctx)
			ta, err = m.cached(id)
		case m.actions.CatchUpWith(ctx, ta):
			ta, err = m.cached(id)
		}
		if err == nil && ta != nil {
			return ta, nil
		}
	}
	return m.live(ctx, id)
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
		if err := m.attemptReported(ta, attempt); err != nil {
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
		m.setPhase(ta, v1.PhaseChange{Phase: st.Phase, Reason: v1.ReasonOf(st.Phase), Message: st.Message, NewAttempt: newAttempt})
		return nil
	})
}

// attemptReported checks the attempt of a report from outside against
// the recorded one.
func (m *Manager) attemptReported(ta *v1.TaskAction, attempt uint32) error {
	rec := ta.Status.Attempts
	switch {
	case m.RunsBuiltIn(ta.Spec.TaskType) && attempt != rec:
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
func (m *Manager) RunsBuiltIn(taskType string) bool {
	return m.cfg.BuiltIn != nil && m.cfg.BuiltIn(taskType)
}

// setPhase is v1.SetPhase with the manager's clock and history limit.
func (m *Manager) setPhase(ta *v1.TaskAction, c v1.PhaseChange) {
	c.At, c.HistoryLimit = m.cfg.Now(), m.cfg.HistoryLimit
	v1.SetPhase(ta, c)
}

// Now is the manager's clock.
func (m *Manager) Now() time.Time { return m.cfg.Now() }
