package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
)

// writeKinds names what the writes per action are made of: it watches the
// actions of a namespace from a resource version on, and names each write
// by what it changed from the object's version before it. Its total
// beside the revisions shows whether every write was to an action.
type writeKinds struct {
	w       watch.Interface
	stopped atomic.Bool // the error a stop brings is no write
	done    chan struct{}
	counts  map[string]int
}

// watchWriteKinds starts naming the writes to namespace's actions after
// revision from.
func watchWriteKinds(b *testing.B, s *server, namespace string, from int64) *writeKinds {
	b.Helper()
	w, err := s.kube.FlyteV1().TaskActions(namespace).Watch(context.Background(),
		metav1.ListOptions{ResourceVersion: strconv.FormatInt(from, 10)})
	if err != nil {
		b.Fatal(err)
	}
	k := &writeKinds{w: w, done: make(chan struct{}), counts: map[string]int{}}
	go k.run()
	return k
}

func (k *writeKinds) run() {
	defer close(k.done)
	last := map[string]*v1.TaskAction{}
	for ev := range k.w.ResultChan() {
		ta, ok := ev.Object.(*v1.TaskAction)
		if !ok {
			if !k.stopped.Load() { // an error: what follows it is not seen
				k.counts[fmt.Sprintf("watch %s: %v", ev.Type, apierrors.FromObject(ev.Object))]++
			}
			continue
		}
		k.counts[writeKind(ev.Type, last[ta.Name], ta)]++
		last[ta.Name] = ta
	}
}

// report stops the watch and prints each kind of write per action.
func (k *writeKinds) report(b *testing.B, n int) {
	k.stopped.Store(true)
	k.w.Stop()
	<-k.done
	total := 0
	for _, name := range slices.Sorted(maps.Keys(k.counts)) {
		detail(b, "%-60s %.2f per action", name, float64(k.counts[name])/float64(n))
		total += k.counts[name]
	}
	detail(b, "%-60s %.2f per action", "writes to the actions, in all", float64(total)/float64(n))
}

// writeKind names a write by what it changed: a create (with its
// finalizers), finalizers, labels, or the status, by the phases it
// recorded (the reasons its phase-history entries added).
func writeKind(t watch.EventType, prev, cur *v1.TaskAction) string {
	switch {
	case t == watch.Added:
		return fmt.Sprintf("create, finalizers %v", cur.Finalizers)
	case t == watch.Deleted:
		return "delete"
	case prev == nil:
		return "a write to an action created before"
	}
	var what []string
	if !slices.Equal(prev.Finalizers, cur.Finalizers) {
		what = append(what, fmt.Sprintf("finalizers %v → %v", prev.Finalizers, cur.Finalizers))
	}
	if !maps.Equal(prev.Labels, cur.Labels) || !maps.Equal(prev.Annotations, cur.Annotations) {
		what = append(what, "labels or annotations")
	}
	if !equality.Semantic.DeepEqual(prev.Status, cur.Status) {
		what = append(what, "status "+addedPhases(prev, cur))
	}
	if len(what) == 0 {
		return "no change seen"
	}
	return strings.Join(what, ", ")
}

// addedPhases lists the phase-history entries a status write added
// ("within Executing" when it added none).
func addedPhases(prev, cur *v1.TaskAction) string {
	p, c := prev.Status.PhaseHistory, cur.Status.PhaseHistory
	if len(c) <= len(p) {
		if len(c) == 0 {
			return "without a phase"
		}
		return "within " + c[len(c)-1].Phase
	}
	var names []string
	for _, h := range c[len(p):] {
		names = append(names, h.Phase)
	}
	return "→ " + strings.Join(names, " → ")
}
