package taskactions

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "taskactions/api/v1"
)

// team-1/prod and team/1-prod map to one namespace. The second pair is
// refused with 409 naming the owner, and none of its ids reaches the
// first pair's actions.
func TestNamespaceCollisionIsRefused(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	base := newRun().Project // a name no other test uses
	owner := ActionID{Project: base + "-1", Domain: "prod", Run: "r1", Name: "a0"}
	other := ActionID{Project: base, Domain: "1-prod", Run: "r1", Name: "a0"}
	if m.Namespace(owner.Project, owner.Domain) != m.Namespace(other.Project, other.Domain) {
		t.Fatal("the test needs two pairs with one namespace")
	}
	mustEnqueue(t, m, echoRequest(owner, ""))

	for _, id := range []ActionID{other, {other.Project, other.Domain, "r2", "x"}} {
		_, _, err := m.Enqueue(ctx, echoRequest(id, ""))
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"`+owner.Project+`"`) || !strings.Contains(err.Error(), `"prod"`) {
			t.Errorf("enqueue %s: %v, want ErrConflict naming %s/prod", id, err, owner.Project)
		}
	}
	if _, err := m.GetTaskAction(ctx, other); !errors.Is(err, ErrNotFound) {
		t.Errorf("get through the other pair: %v, want ErrNotFound", err)
	}
	if _, err := m.AbortAction(ctx, other, "via the other pair"); !errors.Is(err, ErrNotFound) {
		t.Errorf("abort through the other pair: %v, want ErrNotFound", err)
	}
	if _, err := m.PutStatus(ctx, other, 1, StatusUpdate{Phase: v1.PhaseRunning}); !errors.Is(err, ErrNotFound) {
		t.Errorf("status through the other pair: %v, want ErrNotFound", err)
	}
	if got, _ := m.ListRunActions(ctx, other.RunID()); len(got) != 0 {
		t.Errorf("the other pair's run lists %d actions", len(got))
	}
	if v := ViewOf(mustGet(t, m, owner)); v.Phase.Terminal() {
		t.Errorf("the owner's action was touched: %s", v.Phase)
	}

	// A new manager (a restart) learns the owner from the cache.
	m2 := newManager(t, nil)
	if _, _, err := m2.Enqueue(ctx, echoRequest(other, "")); !errors.Is(err, ErrConflict) {
		t.Errorf("after a restart: %v, want ErrConflict", err)
	}
}

func mustGet(t *testing.T, m *Manager, id ActionID) *v1.TaskAction {
	t.Helper()
	ta, err := m.GetTaskAction(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ta
}
