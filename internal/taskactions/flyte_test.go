package taskactions

import (
	"context"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "taskactions/api/v1"
)

// flyteFixtures are test/e2e/testdata/flyte-statuses.yaml: TaskActions as
// Flyte's own Enqueue and executor write them, with Flyte's readings in
// annotations (see the file's header).
func flyteFixtures(t *testing.T) []*v1.TaskAction {
	t.Helper()
	b, err := os.ReadFile("../../test/e2e/testdata/flyte-statuses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.TaskAction
	for _, doc := range strings.Split(string(b), "\n---\n") {
		ta := &v1.TaskAction{}
		if err := yaml.UnmarshalStrict([]byte(doc), ta); err != nil {
			t.Fatal(err)
		}
		out = append(out, ta)
	}
	return out
}

func flyteReads(ta *v1.TaskAction, key string) v1.Phase {
	return v1.Phase(strings.TrimPrefix(ta.Annotations["fixture.flytecheck/"+key], "ACTION_PHASE_"))
}

func fixtureNamed(t *testing.T, name string) *v1.TaskAction {
	t.Helper()
	for _, ta := range flyteFixtures(t) {
		if ta.Spec.ActionName == name {
			return ta
		}
	}
	t.Fatalf("no fixture %s", name)
	return nil
}

// A deletion reads as Flyte's watcher reads it (buildActionUpdate with a
// Deleted event): an unfinished action ends ABORTED, a finished one keeps
// its phase (Flyte's TestBuildActionUpdate_DeleteAfterTerminalPreservesPhase
// and _DeleteOnNonTerminalForcesAborted, on Flyte's own objects).
func TestDeletionsReadAsFlyteReadsThem(t *testing.T) {
	for _, ta := range flyteFixtures(t) {
		if got, want := updateOf(ta, true).Phase, flyteReads(ta, "phase-when-deleted"); got != want {
			t.Errorf("%s deleted: %s, Flyte reads %s", ta.Name, got, want)
		}
	}
}

// createFlytes stores a fixture under a run of the test's own, as Flyte
// would have (object, then its executor's status), and returns it.
func createFlytes(t *testing.T, fixture *v1.TaskAction, run v1.RunID, name string) *v1.TaskAction {
	t.Helper()
	ctx := context.Background()
	ta := fixture.DeepCopy()
	ta.Name, ta.Namespace, ta.OwnerReferences, ta.Annotations = run.Run+"-"+name, "flyte", nil, nil
	ta.Spec.Project, ta.Spec.Domain, ta.Spec.RunName, ta.Spec.ActionName, ta.Spec.ParentActionName = run.Project, run.Domain, run.Run, name, nil
	ta.Labels[v1.LabelProject], ta.Labels[v1.LabelDomain], ta.Labels[v1.LabelRun], ta.Labels[v1.LabelAction] = run.Project, run.Domain, run.Run, name
	c := kubeClient(t).FlyteV1().TaskActions("flyte")
	out, err := c.Create(ctx, ta, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.Status = ta.Status
	if out, err = c.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}
