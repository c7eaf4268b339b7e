package taskactions

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// The store's list is the API server's: the same objects, with the same
// resourceVersions and contents, and a revision the API server watches
// from; a manager started on it sees later changes.
func TestStoredListsAsTheAPIServer(t *testing.T) {
	stored := cp.StoredObjects(v1.SchemeGroupVersion.Group, "taskactions")
	if stored == nil {
		t.Fatal("the embedded control plane reads no stored objects")
	}
	m := newManager(t, nil)
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c1"), "a0"))
	mustPut(t, m, actionOf(run, "a0"), 1, v1.PhaseRunning)

	ctx := context.Background()
	api, err := kubeClient(t).FlyteV1().TaskActions(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := listStored(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(api.Items) || len(got.Items) < 2 {
		t.Fatalf("%d stored, %d through the API server", len(got.Items), len(api.Items))
	}
	byName := map[string]v1.TaskAction{}
	for _, ta := range got.Items {
		byName[ta.Namespace+"/"+ta.Name] = ta
	}
	for _, want := range api.Items {
		have, ok := byName[want.Namespace+"/"+want.Name]
		if !ok {
			t.Errorf("%s/%s is not in the stored list", want.Namespace, want.Name)
			continue
		}
		if !equality.Semantic.DeepEqual(have, want) {
			t.Errorf("%s/%s differs:\nstored %+v\napi    %+v", want.Namespace, want.Name, have, want)
		}
	}
	if got.ResourceVersion == "" || got.ResourceVersion < "1" {
		t.Errorf("list revision %q", got.ResourceVersion)
	}

	// A manager whose lists are the store's has them, and follows on.
	ms := newManager(t, nil, func(c *Config) { c.Stored = stored })
	if _, err := ms.GetTaskAction(ctx, actionOf(run, "c1")); err != nil {
		t.Fatalf("the stored list's manager: %v", err)
	}
	mustPut(t, m, actionOf(run, "c1"), 1, v1.PhaseSucceeded)
	eventually(t, 10*time.Second, "the change after the list", func() bool {
		ta, err := ms.GetTaskAction(ctx, actionOf(run, "c1"))
		return err == nil && v1.PhaseOf(ta.Status.Conditions) == v1.PhaseSucceeded
	})
}
