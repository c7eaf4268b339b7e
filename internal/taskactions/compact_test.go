package taskactions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"

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

// bytesPerRun is what f allocates on average over n runs. TotalAlloc
// counts every allocation of the process, other goroutines' included
// (informers of other tests in the package), and these only add: the
// least of a few measurements is f's own.
func bytesPerRun(n int, f func()) int64 {
	least := int64(-1)
	for range 5 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			f()
		}
		runtime.ReadMemStats(&after)
		if b := int64(after.TotalAlloc-before.TotalAlloc) / int64(n); least < 0 || b < least {
			least = b
		}
	}
	return least
}
