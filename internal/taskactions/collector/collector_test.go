package collector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
)

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
