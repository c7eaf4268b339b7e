package pipeline

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
)

func TestDeleted(t *testing.T) {
	ta := &v1.TaskAction{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for _, tc := range []struct {
		name string
		obj  any
		want *v1.TaskAction
	}{
		{"the object", ta, ta},
		{"a tombstone", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: ta}, ta},
		{"another kind", &metav1.PartialObjectMetadata{}, nil},
		{"a tombstone of another kind", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Deleted[*v1.TaskAction](tc.obj)
			if got != tc.want || ok != (tc.want != nil) {
				t.Errorf("Deleted = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
