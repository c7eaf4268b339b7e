package taskactions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// What the server writes for itself (labels, finalizers) and the resource
// version change nothing a client sees; a status change, a deletion or a
// new incarnation do.
func TestSameView(t *testing.T) {
	base := func() *v1.TaskAction {
		return &v1.TaskAction{
			ObjectMeta: metav1.ObjectMeta{Name: "r-a", Namespace: "p-d", UID: "u1", ResourceVersion: "10",
				CreationTimestamp: metav1.Unix(1000, 0), Labels: map[string]string{"x": "y"}},
			Spec: v1.TaskActionSpec{Project: "p", Domain: "d", RunName: "r", ActionName: "a", TaskType: "echo"},
			Status: v1.TaskActionStatus{Attempts: 1, Conditions: []metav1.Condition{{
				Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonExecuting, LastTransitionTime: metav1.Unix(1001, 0),
			}}},
		}
	}
	before := updateOf(base(), false)
	for name, tc := range map[string]struct {
		change func(*v1.TaskAction)
		del    bool
		same   bool
	}{
		"resource version":   {func(ta *v1.TaskAction) { ta.ResourceVersion = "11" }, false, true},
		"terminal label":     {func(ta *v1.TaskAction) { ta.Labels[v1.LabelTerminalState] = "true" }, false, true},
		"finalizer released": {func(ta *v1.TaskAction) { ta.Finalizers = nil }, false, true},
		"attempt":            {func(ta *v1.TaskAction) { ta.Status.Attempts = 2 }, false, false},
		"phase":              {func(ta *v1.TaskAction) { ta.Status.Conditions[0].Reason = v1.ReasonQueued }, false, false},
		"plugin phase":       {func(ta *v1.TaskAction) { ta.Status.PluginPhase = "Running: pid 1" }, false, false},
		"deleted":            {func(*v1.TaskAction) {}, true, false},
		"new incarnation":    {func(ta *v1.TaskAction) { ta.UID = "u2" }, false, false},
	} {
		ta := base()
		tc.change(ta)
		if got := before.sameView(updateOf(ta, tc.del)); got != tc.same {
			t.Errorf("%s: sameView %v, want %v", name, got, tc.same)
		}
	}
}
