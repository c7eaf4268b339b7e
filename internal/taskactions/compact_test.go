package taskactions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
)

// finishedChild is a finished child action as the server stores it.
func finishedChild(t *testing.T, name string) *v1.TaskAction {
	t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":"flyte.org/v1","kind":"TaskAction",
	 "metadata":{"name":"r1-%[1]s","namespace":"p-d","uid":"uid-%[1]s","resourceVersion":"7",
	  "labels":{"flyte.org/action":%[1]q,"flyte.org/project":"p","flyte.org/domain":"d","flyte.org/run":"r1","flyte.org/parent":"a0"},
	  "ownerReferences":[{"apiVersion":"flyte.org/v1","kind":"TaskAction","name":"r1-a0","uid":"uid-a0"}]},
	 "spec":{"project":"p","domain":"d","runName":"r1","actionName":%[1]q,"parentActionName":"a0","taskType":"echo",
	  "runOutputBase":"s3://bucket/r1","inputUri":"s3://bucket/r1/%[1]s/inputs.pb"},
	 "status":{"attempts":1,"pluginPhase":"Success: echoed the inputs",
	  "stateJson":"{\"phase\":\"SUCCEEDED\",\"attempts\":1}",
	  "conditions":[{"type":"Succeeded","status":"True","reason":"Completed","message":"echoed the inputs","lastTransitionTime":"2026-12-01T08:34:04Z"}],
	  "phaseHistory":[{"phase":"Queued","occurredAt":"2026-12-01T08:34:03Z"},{"phase":"Completed","message":"echoed the inputs","occurredAt":"2026-12-01T08:34:04Z"}]}}`, name)
	ta := &v1.TaskAction{}
	if err := json.Unmarshal([]byte(doc), ta); err != nil {
		t.Fatal(err)
	}
	return ta
}

// Compacting changes no value, and two actions then share the strings
// they have in common.
func TestCompactSharesRepeatedStrings(t *testing.T) {
	// Canonical copies last from one collection to the next (unique holds
	// them weakly): no collection between the two.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	a, b := finishedChild(t, "c1"), finishedChild(t, "c2")
	want := a.DeepCopy()
	compact(a)
	compact(b)
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("compact changed the object:\n got %+v\nwant %+v", a, want)
	}
	same := func(what, x, y string) {
		t.Helper()
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q is held twice", what, x)
		}
	}
	for k := range a.Labels {
		for k2 := range b.Labels {
			if k == k2 {
				same("label key", k, k2)
			}
		}
	}
	same("project label", a.Labels["flyte.org/project"], b.Labels["flyte.org/project"])
	same("run", a.Spec.RunName, b.Spec.RunName)
	same("parent", *a.Spec.ParentActionName, *b.Spec.ParentActionName)
	same("owner", a.OwnerReferences[0].Name, b.OwnerReferences[0].Name)
	same("condition message", a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)
	same("phase", a.Status.PhaseHistory[1].Phase, b.Status.PhaseHistory[1].Phase)
	same("state", a.Status.StateJSON, b.Status.StateJSON)
	if unsafe.StringData(a.Spec.InputURI) == unsafe.StringData(b.Spec.InputURI) {
		t.Error("two different input URIs share memory")
	}
}

// A recorded action has 8 labels, a full small map: compacting must not
// turn it into a hashed table (Go grows a full small map on any store).
func TestCompactKeepsLabelsSmall(t *testing.T) {
	ta := finishedChild(t, "c1")
	ta.Labels["flyte.org/is-root"] = "false"
	ta.Labels["flyte.org/action-type"] = "echo"
	ta.Labels[v1.LabelTerminalState] = "true"
	if len(ta.Labels) != 8 {
		t.Fatalf("%d labels, want 8", len(ta.Labels))
	}
	compact(ta.DeepCopy()) // the strings are canonical from here on
	const n = 1000
	copying := bytesPerRun(n, func() { ta.DeepCopy() })
	compacting := bytesPerRun(n, func() { compact(ta.DeepCopy()) }) - copying
	if compacting > 400 {
		t.Errorf("compacting an action with 8 labels allocates %d bytes, want no more than a new small map (< 400)", compacting)
	}
}

// bytesPerRun is what f allocates on average over n runs (TotalAlloc
// counts every allocation of the process: run alone, after a collection).
func bytesPerRun(n int, f func()) int64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc-before.TotalAlloc) / int64(n)
}

// An action is orphaned when no owner it names is cached under that name
// with that uid: a parent deleted and made again under its name is not
// the old children's owner.
func TestOrphaned(t *testing.T) {
	owner := func(name, uid string) *v1.TaskAction {
		return &v1.TaskAction{ObjectMeta: metav1.ObjectMeta{Namespace: "p-d", Name: name, UID: types.UID(uid)}}
	}
	child := func(refs ...metav1.OwnerReference) *v1.TaskAction {
		return &v1.TaskAction{ObjectMeta: metav1.ObjectMeta{Namespace: "p-d", Name: "r1-c1", UID: "uid-c1", OwnerReferences: refs}}
	}
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "flyte.org/v1", Kind: "TaskAction", Name: name, UID: types.UID(uid)}
	}
	for _, tc := range []struct {
		name   string
		cached []*v1.TaskAction
		action *v1.TaskAction
		want   bool
	}{
		{"owner cached", []*v1.TaskAction{owner("r1-a0", "uid-a0")}, child(ref("r1-a0", "uid-a0")), false},
		{"owner gone", nil, child(ref("r1-a0", "uid-a0")), true},
		{"owner made again", []*v1.TaskAction{owner("r1-a0", "uid-new")}, child(ref("r1-a0", "uid-a0")), true},
		{"owner in another namespace", []*v1.TaskAction{{ObjectMeta: metav1.ObjectMeta{Namespace: "q-d", Name: "r1-a0", UID: "uid-a0"}}}, child(ref("r1-a0", "uid-a0")), true},
		{"one of two owners left", []*v1.TaskAction{owner("r1-b0", "uid-b0")}, child(ref("r1-a0", "uid-a0"), ref("r1-b0", "uid-b0")), false},
		{"no owner", nil, child(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, o := range tc.cached {
				if err := idx.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			if got := orphaned(tc.action, idx); got != tc.want {
				t.Errorf("orphaned = %v, want %v", got, tc.want)
			}
		})
	}
}
