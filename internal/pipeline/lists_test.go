package pipeline

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// obj is an object of list "run|<run>", created sec seconds in.
type obj = *metav1.PartialObjectMetadata

func listObj(run, name string, sec int, rv string) obj {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"run": run},
		CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+sec), 0)),
	}}
}

// oldestFirst is the order of a run's actions: by age, then name.
func oldestFirst(a, b obj) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
}

func newTestLists() *listCache[obj, string] {
	return newListCache[obj, string](func(o obj) []string { return []string{ListKey("run", o.Labels["run"])} }, oldestFirst, nil)
}

// viewOf is the view of an object in these tests: name@resourceVersion.
func viewOf(o obj) string {
	if o == nil {
		return ""
	}
	return o.Name + "@" + o.ResourceVersion
}

func describe(objs []obj) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name + "@" + o.ResourceVersion
	}
	return out
}

// TestListCacheFollowsEvents checks that a cached list, once built, is
// patched by events to what a fresh build from the same objects gives.
func TestListCacheFollowsEvents(t *testing.T) {
	runKey := ListKey("run", "r")
	type event struct{ old, obj obj }
	b1, c1, d1 := listObj("r", "b", 1, "1"), listObj("r", "c", 1, "2"), listObj("r", "d", 2, "3")
	for _, tc := range []struct {
		name   string
		events []event
		want   []string
	}{
		{"status change keeps the place", []event{{c1, listObj("r", "c", 1, "9")}}, []string{"b@1", "c@9", "d@3"}},
		{"add in the middle, by age then name", []event{{nil, listObj("r", "bb", 1, "9")}}, []string{"b@1", "bb@9", "c@2", "d@3"}},
		{"add at the end", []event{{nil, listObj("r", "a", 5, "9")}}, []string{"b@1", "c@2", "d@3", "a@9"}},
		{"an add already in the built list is not doubled", []event{{nil, c1}}, []string{"b@1", "c@2", "d@3"}},
		{"delete", []event{{b1, nil}}, []string{"c@2", "d@3"}},
		{"delete of an unknown object", []event{{listObj("r", "x", 1, "9"), nil}}, []string{"b@1", "c@2", "d@3"}},
		{"moved to another list", []event{{d1, listObj("s", "d", 2, "9")}}, []string{"b@1", "c@2"}},
		{"other lists are left alone", []event{{nil, listObj("s", "a", 0, "9")}}, []string{"b@1", "c@2", "d@3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestLists()
			built := 0
			build := func() ([]obj, error) {
				built++
				return []obj{d1, c1, b1}, nil
			}
			if _, err := c.objects(runKey, build, viewOf); err != nil {
				t.Fatal(err)
			}
			for _, ev := range tc.events {
				c.update(ev.old, ev.obj, viewOf(ev.obj))
			}
			got, _ := c.objects(runKey, build, viewOf)
			if !slices.Equal(describe(got), tc.want) {
				t.Errorf("list = %v, want %v", describe(got), tc.want)
			}
			views, _ := c.views(runKey, build, viewOf)
			if !slices.Equal(views, tc.want) {
				t.Errorf("views = %v, want %v", views, tc.want)
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
	c := newTestLists()
	key := ListKey("run", "r")
	stale := listObj("r", "b", 1, "1")
	builds := 0
	build := func() ([]obj, error) {
		builds++
		if builds == 1 {
			fresh := listObj("r", "b", 1, "2")
			c.update(stale, fresh, viewOf(fresh)) // arrives mid-build
			return []obj{stale}, nil
		}
		return []obj{listObj("r", "b", 1, "2")}, nil
	}
	for range 2 {
		if _, err := c.objects(key, build, viewOf); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := c.objects(key, build, viewOf)
	if fmt.Sprint(describe(got)) != "[b@2]" || builds != 2 {
		t.Errorf("list %v after %d builds; want [b@2] after 2", describe(got), builds)
	}
}

// TestListCacheCopies: callers own what get returns.
func TestListCacheCopies(t *testing.T) {
	c := newTestLists()
	key := ListKey("run", "r")
	build := func() ([]obj, error) { return []obj{listObj("r", "b", 1, "1")}, nil }
	got, _ := c.objects(key, build, viewOf)
	got[0] = nil
	views, _ := c.views(key, build, viewOf)
	views[0] = ""
	again, _ := c.objects(key, build, viewOf)
	againViews, _ := c.views(key, build, viewOf)
	if again[0] == nil || againViews[0] == "" {
		t.Fatal("a caller's change reached the cached list")
	}
}

func zerologNop() zerolog.Logger { return zerolog.Nop() }
