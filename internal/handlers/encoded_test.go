package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/taskactions"
)

func sampleUpdates() []*taskactions.ActionUpdate {
	at := metav1.NewTime(time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC))
	root := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p-d", Name: "r-a0", CreationTimestamp: at, ResourceVersion: "7"},
		Spec:       v1.TaskActionSpec{Project: "p", Domain: "d", RunName: "r", ActionName: "a0", TaskType: "echo", RunOutputBase: "file:///out"},
	}
	failed := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p-d", Name: "r-c1", CreationTimestamp: at, ResourceVersion: "9"},
		Spec:       v1.TaskActionSpec{Project: "p", Domain: "d", RunName: "r", ActionName: "c1", ParentActionName: new("a0"), TaskType: "process"},
		Status: v1.TaskActionStatus{
			Attempts:     3,
			Conditions:   []metav1.Condition{{Type: v1.ConditionFailed, Status: metav1.ConditionTrue, Reason: "Failed", Message: `exit "2"`, LastTransitionTime: at}},
			PhaseHistory: []v1.PhaseTransition{{Phase: "Queued", OccurredAt: at}, {Phase: "Failed", OccurredAt: at, Message: "<&>"}},
			ErrorState:   &v1.ErrorState{Code: "2", Kind: "USER", Message: "exit status 2"},
		},
	}
	return []*taskactions.ActionUpdate{
		{Action: taskactions.ViewOf(root)},
		{Action: taskactions.ViewOf(failed)},
		{Action: taskactions.ViewOf(failed), Deleted: true},
	}
}

// TestEncodedActionsMatchSchemaTypes: the memoized encodings decode to
// exactly the generated types' values, for lists and stream events.
func TestEncodedActionsMatchSchemaTypes(t *testing.T) {
	us := sampleUpdates()
	for _, u := range us {
		var got struct {
			Action
			Deleted *bool `json:"deleted"`
		}
		if err := json.Unmarshal(encodeActionEvent(u), &got); err != nil {
			t.Fatalf("event data %s: %v", encodeActionEvent(u), err)
		}
		if want := actionOf(&u.Action); !reflect.DeepEqual(got.Action, want) || got.Deleted == nil || *got.Deleted != u.Deleted {
			t.Errorf("event data %s\ndecodes to %+v (deleted %v)\nwant %+v (deleted %v)", encodeActionEvent(u), got.Action, got.Deleted, want, u.Deleted)
		}
	}

	rec := httptest.NewRecorder()
	if err := (actionList{Items: us}).VisitListRunActionsResponse(rec); err != nil {
		t.Fatal(err)
	}
	var list ActionList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatalf("list %s: %v", rec.Body, err)
	}
	if len(list.Items) != len(us) {
		t.Fatalf("%d items, want %d", len(list.Items), len(us))
	}
	for i, u := range us {
		if want := actionOf(&u.Action); !reflect.DeepEqual(list.Items[i], want) {
			t.Errorf("item %d = %+v, want %+v", i, list.Items[i], want)
		}
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" || rec.Code != 200 {
		t.Errorf("status %d, content type %q", rec.Code, ct)
	}

	rec = httptest.NewRecorder()
	_ = actionList{}.VisitListChildActionsResponse(rec)
	if rec.Body.String() != "{\"items\":[]}\n" {
		t.Errorf("empty list = %q", rec.Body)
	}
}

// TestPagesBiggerThanAChunk: a page written in several chunks is the same
// document whatever its size; one that fits a chunk has a Content-Length
// that matches it, a bigger one none (it is sent as it is made).
func TestPagesBiggerThanAChunk(t *testing.T) {
	one := sampleUpdates()[1]
	for _, n := range []int{0, 1, 2, chunkSize / len(actionJSON(one)), 3 * chunkSize / len(actionJSON(one))} {
		items := make([]*taskactions.ActionUpdate, n)
		for i := range items {
			items[i] = one
		}
		for _, next := range []string{"", "tok"} {
			rec := httptest.NewRecorder()
			if err := (actionList{Items: items, Continue: next}).VisitListRunActionsResponse(rec); err != nil {
				t.Fatal(err)
			}
			want := strconv.Itoa(rec.Body.Len())
			if rec.Body.Len() > chunkSize {
				want = ""
			}
			if cl := rec.Header().Get("Content-Length"); cl != want || rec.Code != http.StatusOK {
				t.Errorf("%d items: status %d, Content-Length %q for a body of %d bytes", n, rec.Code, cl, rec.Body.Len())
			}
			var list ActionList
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatalf("%d items: %v", n, err)
			}
			if len(list.Items) != n || value(list.Continue) != next {
				t.Errorf("%d items, continue %q: got %d items, continue %q", n, next, len(list.Items), value(list.Continue))
			}
		}
	}
}
