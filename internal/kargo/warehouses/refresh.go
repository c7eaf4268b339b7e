package warehouses

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/stages"
)

// Refresh asks the Warehouse controller to discover now, as Kargo does: a
// merge patch of the refresh annotation to the current time. With wait,
// it returns once status.lastHandledRefresh shows that value.
func (m *Manager) Refresh(ctx context.Context, project, name string, wait bool) (*View, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, kargoapi.AnnotationKeyRefresh, token)
	out, err := m.client.KargoV1alpha1().Warehouses(project).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, writeError(project, name, err)
	}
	m.warehouses.Wrote(out)
	if !wait {
		return m.warehouses.View(out), nil
	}
	return m.waitRefreshed(ctx, project, name, token)
}

// waitRefreshed follows the Warehouse's stream until its status shows
// the refresh token, for as long as a Stage refresh waits.
func (m *Manager) waitRefreshed(ctx context.Context, project, name, token string) (*View, error) {
	ctx, cancel := context.WithTimeout(ctx, stages.RefreshTimeout)
	defer cancel()
	sub, _, snap := m.Subscribe(ctx, project, name, nil)
	defer sub.Close()
	handled := func(v *View) bool { return !v.Deleted && v.Object.Status.LastHandledRefresh == token }
	for _, v := range snap {
		if handled(v) {
			return v, nil
		}
	}
	var buf []journal.Entry[*View]
	for {
		select {
		case <-sub.Ready():
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("Warehouse %q: %w within %s (is a Warehouse controller running?)",
					name, stages.ErrRefreshNotHandled, stages.RefreshTimeout)
			}
			return nil, ctx.Err()
		}
		var lagged bool
		buf, lagged = sub.Drain(buf[:0])
		for _, e := range buf {
			if e.Value.Deleted {
				return nil, notFound(project, name)
			}
			if handled(e.Value) {
				return e.Value, nil
			}
		}
		if lagged {
			if v, err := m.Get(ctx, project, name); err == nil && handled(v) {
				return v, nil
			}
		}
	}
}
