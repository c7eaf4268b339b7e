package controlplane

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"taskactions/internal/kube/clientset/versioned"
)

// managers lists the field managers the API server stored for an action.
func managers(t *testing.T, name string) []string {
	t.Helper()
	got, err := client(t).FlyteV1().TaskActions("p-d").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range got.ManagedFields {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	slices.Sort(out)
	return out
}

// This server's own writes are stored without a managedFields entry;
// those of other clients keep theirs, through this server's status
// writes, and server-side apply still records its manager.
func TestOwnWritesCarryNoManagedFields(t *testing.T) {
	ctx := t.Context()
	own := client(t).FlyteV1().TaskActions("p-d")
	cfg := rest.CopyConfig(shared.RESTConfig())
	cfg.UserAgent = "kubectl/v1.37.2 (linux/amd64)"
	other, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubectl := other.FlyteV1().TaskActions("p-d")

	if _, err := own.Create(ctx, newAction("own-a0", "own"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := managers(t, "own-a0"); len(got) != 0 {
		t.Errorf("created by this server: managers %v, want none", got)
	}
	if _, err := kubectl.Create(ctx, newAction("kubectl-a0", "kubectl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"own-a0", "kubectl-a0"} {
		ta, err := own.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ta.Status.Attempts = 1
		if _, err := own.UpdateStatus(ctx, ta, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := managers(t, "own-a0"); len(got) != 0 {
		t.Errorf("after this server's status write: managers %v, want none", got)
	}
	if got, want := managers(t, "kubectl-a0"), []string{"kubectl/Update"}; !slices.Equal(got, want) {
		t.Errorf("created by kubectl, status by this server: managers %v, want %v", got, want)
	}

	apply := []byte(`{"apiVersion":"flyte.org/v1","kind":"TaskAction","metadata":{"name":"own-a0","labels":{"team":"a"}}}`)
	force := true
	if _, err := kubectl.Patch(ctx, "own-a0", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
		t.Fatalf("server-side apply on an object this server wrote: %v", err)
	}
	if got := managers(t, "own-a0"); !slices.Contains(got, "kubectl/Apply") {
		t.Errorf("after a server-side apply: managers %v, want kubectl/Apply among them", got)
	}
}
