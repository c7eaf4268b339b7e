package taskactions

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// listAction is a child of a0 in run r, created sec seconds in.
func listAction(run, name string, sec int, rv string) *v1.TaskAction {
	return &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "p-d", Name: run + "-" + name, ResourceVersion: rv,
			CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0)),
		},
		Spec: v1.TaskActionSpec{Project: "p", Domain: "d", RunName: run, ActionName: name, ParentActionName: new("a0")},
	}
}

func describe(tas []*v1.TaskAction) []string {
	out := make([]string, len(tas))
	for i, ta := range tas {
		out[i] = ta.Spec.ActionName + "@" + ta.ResourceVersion
	}
	return out
}

// TestListCacheFollowsEvents checks that a cached list, once built, is
// patched by events to what a fresh build from the same objects gives.
func TestListCacheFollowsEvents(t *testing.T) {
	runKey := indexRun + "|" + runIndexKey("p", "d", "r")
	type event struct{ old, ta *v1.TaskAction }
	b1, c1, d1 := listAction("r", "b", 1, "1"), listAction("r", "c", 1, "2"), listAction("r", "d", 2, "3")
	for _, tc := range []struct {
		name   string
		events []event
		want   []string
	}{
		{"status change keeps the place", []event{{c1, listAction("r", "c", 1, "9")}}, []string{"b@1", "c@9", "d@3"}},
		{"add in the middle, by age then name", []event{{nil, listAction("r", "bb", 1, "9")}}, []string{"b@1", "bb@9", "c@2", "d@3"}},
		{"add at the end", []event{{nil, listAction("r", "a", 5, "9")}}, []string{"b@1", "c@2", "d@3", "a@9"}},
		{"an add already in the built list is not doubled", []event{{nil, c1}}, []string{"b@1", "c@2", "d@3"}},
		{"delete", []event{{b1, nil}}, []string{"c@2", "d@3"}},
		{"delete of an unknown object", []event{{listAction("r", "x", 1, "9"), nil}}, []string{"b@1", "c@2", "d@3"}},
		{"moved to another run", []event{{d1, listAction("s", "d", 2, "9")}}, []string{"b@1", "c@2"}},
		{"other runs are left alone", []event{{nil, listAction("s", "a", 0, "9")}}, []string{"b@1", "c@2", "d@3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newListCache()
			built := 0
			build := func() ([]*v1.TaskAction, error) {
				built++
				return []*v1.TaskAction{d1, c1, b1}, nil
			}
			if _, err := c.get(runKey, build); err != nil {
				t.Fatal(err)
			}
			for _, ev := range tc.events {
				c.update(ev.old, ev.ta)
			}
			got, _ := c.get(runKey, build)
			if !slices.Equal(describe(got), tc.want) {
				t.Errorf("list = %v, want %v", describe(got), tc.want)
			}
			if built != 1 {
				t.Errorf("built %d times, want once (then patched)", built)
			}
		})
	}
}

// TestListCacheDropsListBuiltDuringEvent: a list whose build raced an
// event is served but not kept, since the event was not applied to it.
func TestListCacheDropsListBuiltDuringEvent(t *testing.T) {
	c := newListCache()
	key := indexRun + "|" + runIndexKey("p", "d", "r")
	stale := listAction("r", "b", 1, "1")
	builds := 0
	build := func() ([]*v1.TaskAction, error) {
		builds++
		if builds == 1 {
			c.update(stale, listAction("r", "b", 1, "2")) // arrives mid-build
			return []*v1.TaskAction{stale}, nil
		}
		return []*v1.TaskAction{listAction("r", "b", 1, "2")}, nil
	}
	for range 2 {
		if _, err := c.get(key, build); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := c.get(key, build)
	if fmt.Sprint(describe(got)) != "[b@2]" || builds != 2 {
		t.Errorf("list %v after %d builds; want [b@2] after 2", describe(got), builds)
	}
}

// TestListCacheCopies: callers own what get returns.
func TestListCacheCopies(t *testing.T) {
	c := newListCache()
	key := indexRun + "|" + runIndexKey("p", "d", "r")
	build := func() ([]*v1.TaskAction, error) { return []*v1.TaskAction{listAction("r", "b", 1, "1")}, nil }
	got, _ := c.get(key, build)
	got[0] = nil
	again, _ := c.get(key, build)
	if again[0] == nil {
		t.Fatal("a caller's change reached the cached list")
	}
}
