package taskactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// bigEnv is n bytes of environment in 4 KiB values.
func bigEnv(prefix string, n int) map[string]string {
	env := map[string]string{}
	for i := 0; n > 0; i++ {
		size := min(n, 4096)
		env[fmt.Sprintf("%s_%d", prefix, i)] = strings.Repeat("v", size)
		n -= size
	}
	return env
}

// Whatever makes an action big, its own fields or what it inherits, it is
// refused before anything is stored, with a message that says what takes
// the room; one just under the bound is accepted.
func TestEnqueueRefusesOversizedActions(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	blob := func(n int) []byte {
		return []byte(`{"type":"echo","custom":{"blob":"` + strings.Repeat("x", n) + `"}}`)
	}

	// The template is stored as base64: 600 KiB of it takes 800.
	tmpl := echoRequest(actionOf(run, "t1"), "")
	tmpl.TaskTemplate = blob(600 << 10)
	_, _, err := m.Enqueue(ctx, tmpl)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "task template") {
		t.Fatalf("600 KiB template: %v, want ErrTooLarge naming the template", err)
	}

	// A parent of 500 KiB of env vars is fine; a child adding 300 KiB more
	// inherits the 500 and is not.
	parent := echoRequest(actionOf(run, "p"), "")
	parent.RunSpec = &RunSpec{Envs: bigEnv("P", 500<<10), Annotations: map[string]string{"note": strings.Repeat("a", 100<<10)}}
	mustEnqueue(t, m, parent)
	child := echoRequest(actionOf(run, "c"), "p")
	child.RunSpec = &RunSpec{Envs: bigEnv("C", 200<<10)}
	_, _, err = m.Enqueue(ctx, child)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "env vars") || !strings.Contains(err.Error(), "parent") {
		t.Fatalf("child inheriting 600 KiB: %v, want ErrTooLarge naming env vars and the parent", err)
	}
	// A grandchild chain cannot creep past it either: each level adds a
	// little and the first over the bound is refused.
	prev := "p"
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("a chain of children grew past the bound")
		}
		g := echoRequest(actionOf(run, fmt.Sprintf("g%d", i)), prev)
		g.RunSpec = &RunSpec{Envs: bigEnv(fmt.Sprintf("G%d", i), 40<<10)}
		if _, _, err := m.Enqueue(ctx, g); err != nil {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("level %d: %v, want ErrTooLarge", i, err)
			}
			break
		}
		prev = g.ID.Name
	}
	if _, err := m.objects.live(ctx, actionOf(run, "c")); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused child was stored: %v", err)
	}

	// Annotations inherited: a parent of 600 KiB (env and annotations), a
	// child adding 200 KiB of annotations.
	ap := echoRequest(actionOf(run, "ap"), "")
	ap.RunSpec = &RunSpec{Envs: bigEnv("P", 450<<10), Annotations: map[string]string{"a": strings.Repeat("a", 150<<10)}}
	mustEnqueue(t, m, ap)
	ac := echoRequest(actionOf(run, "ac"), "ap")
	ac.RunSpec = &RunSpec{Annotations: map[string]string{"b": strings.Repeat("b", 200<<10)}}
	if _, _, err := m.Enqueue(ctx, ac); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "annotations") {
		t.Fatalf("child inheriting annotations: %v, want ErrTooLarge naming annotations", err)
	}
}

// An action as big as allowed still records every status it is given,
// however long the messages and however many transitions.
func TestLargestActionRecordsStatusForever(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	req := echoRequest(actionOf(run, "a0"), "")
	req.RunSpec = &RunSpec{Envs: bigEnv("E", MaxObjectBytes-16<<10)}
	ta := mustEnqueue(t, m, req)
	if size := objectSize(ta); size > MaxObjectBytes || size < MaxObjectBytes-32<<10 {
		t.Fatalf("the action takes %d bytes; the test wants one just under %d", size, MaxObjectBytes)
	}
	long := strings.Repeat("m", 8<<10)
	// Past the history's bound of 64 entries; each write sends the whole
	// 760 KiB object, so not many more.
	const attempts = 70
	for attempt := uint32(1); attempt <= attempts; attempt++ {
		_, err := m.PutStatus(ctx, actionOf(run, "a0"), attempt, StatusUpdate{
			Phase: v1.PhaseRunning, Message: long, Error: &v1.ErrorState{Kind: v1.ErrorKindUser, Code: "1", Message: long},
		})
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	if _, err := m.PutStatus(ctx, actionOf(run, "a0"), attempts, StatusUpdate{Phase: v1.PhaseSucceeded, Message: long}); err != nil {
		t.Fatalf("final status: %v", err)
	}
}

// An action stored by someone else (kubectl) so big that etcd takes no
// change of it gets a clear error, not a 500: the abort and a status
// report say so.
func TestExistingOversizedActionSaysSo(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	ns := m.Namespace(run.Project, run.Domain)
	tas := kubeClient(t).FlyteV1().TaskActions(ns)
	// The biggest object etcd stores: any change to it is too large.
	var stored *v1.TaskAction
	lo, hi := 1000<<10, 1300<<10 // template bytes: stored / refused
	for hi-lo > 64 {
		mid := (lo + hi) / 2
		ta := &v1.TaskAction{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-a%d", run.Run, mid), Namespace: ns},
			Spec: v1.TaskActionSpec{RunName: run.Run, Project: run.Project, Domain: run.Domain, ActionName: fmt.Sprintf("a%d", mid),
				TaskType: "external", TaskTemplate: []byte(strings.Repeat("x", mid))},
		}
		out, err := tas.Create(ctx, ta, metav1.CreateOptions{})
		if err != nil {
			hi = mid
			continue
		}
		lo, stored = mid, out
	}
	if stored == nil {
		t.Fatal("etcd stored no object of 1000 KiB")
	}
	id := actionOf(run, stored.Spec.ActionName)
	eventually(t, 10*time.Second, "the cache to have it", func() bool { got, _ := m.cached.get(id); return got != nil })
	if _, err := m.AbortAction(ctx, id, ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("abort: %v, want ErrTooLarge", err)
	}
	if _, err := m.PutStatus(ctx, id, 1, StatusUpdate{Phase: v1.PhaseRunning}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("status: %v, want ErrTooLarge", err)
	}
	if err := CheckSize(stored); !errors.Is(err, ErrTooLarge) {
		t.Errorf("CheckSize of the stored object: %v, want ErrTooLarge", err)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ééééééé", 8, "éé…"}, // never cuts a rune
	} {
		if got := truncate(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// The size an action is refused at is the size it keeps: a child that
// takes the room up to the bound, with what it inherits, passes the same
// check once stored (the executor checks stored actions with it, and
// failed such children ObjectTooLarge), and still after what it gains
// later (the plugin finalizer, the terminal label, an abort reason); and
// what the API server stores of it, managed fields included, is no
// larger than the size checked.
func TestSizeCheckedIsSizeStored(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	parent := echoRequest(actionOf(run, "p"), "")
	parent.RunSpec = &RunSpec{Envs: bigEnv("P", 300<<10), Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": strings.Repeat("n", 50<<10)}}
	p := mustEnqueue(t, m, parent)

	// The largest child the enqueue takes, to the byte.
	child := func(n int) EnqueueRequest {
		c := echoRequest(actionOf(run, "c"), "p")
		c.RunSpec = &RunSpec{Envs: map[string]string{"C": strings.Repeat("c<", n/2) + strings.Repeat("c", n%2)}}
		return c
	}
	fits := func(n int) bool {
		want, err := m.cfg.build(p.Namespace, child(n), p)
		if err != nil {
			t.Fatal(err)
		}
		return CheckSize(want) == nil
	}
	lo, hi := 0, MaxObjectBytes
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if _, _, err := m.Enqueue(ctx, child(hi)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a child one byte past the bound: %v, want ErrTooLarge", err)
	}
	mustEnqueue(t, m, child(lo))
	stored, err := m.objects.live(ctx, actionOf(run, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSize(stored); err != nil {
		t.Errorf("the child the enqueue took fails the check once stored: %v", err)
	}
	if size := storedSize(t, stored); size > objectSize(stored) {
		t.Errorf("stored it takes %d bytes, more than the %d checked", size, objectSize(stored))
	}

	// What it gains later, stored where the API allows.
	patch := `{"metadata":{"labels":{"` + v1.LabelTerminalState + `":"true"},"annotations":{"` + v1.AnnotationAbortReason + `":"` + strings.Repeat("r", 1024) + `"}}}`
	marked, err := kubeClient(t).FlyteV1().TaskActions(stored.Namespace).Patch(ctx, stored.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	marked.Finalizers = append(marked.Finalizers, v1.FinalizerPlugin)
	if err := CheckSize(marked); err != nil {
		t.Errorf("after its bookkeeping: %v", err)
	}
	if size := storedSize(t, marked); size > objectSize(marked) {
		t.Errorf("after its bookkeeping it takes %d bytes stored, more than the %d checked", size, objectSize(marked))
	}
}

// storedSize is the JSON of an action as the API server keeps it, but for
// its status (bounded on its own).
func storedSize(t *testing.T, ta *v1.TaskAction) int {
	t.Helper()
	c := ta.DeepCopy()
	c.Status = v1.TaskActionStatus{}
	var fields []metav1.ManagedFieldsEntry
	for _, f := range c.ManagedFields {
		if f.Subresource == "" {
			fields = append(fields, f)
		}
	}
	c.ManagedFields = fields
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}
