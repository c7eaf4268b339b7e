package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder notes what the parts of a test did, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// service is a part that is ready at once (or fails to start with
// startErr) and notes its start and stop.
func service(r *recorder, name string, startErr error) Runnable {
	return Func(func(ctx context.Context, ready func()) error {
		if startErr != nil {
			return startErr
		}
		r.note("start " + name)
		ready()
		<-ctx.Done()
		r.note("stop " + name)
		return nil
	})
}

func TestGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	var r recorder
	g := NewGroup()
	for _, n := range []string{"a", "b", "c"} {
		g.Add(n, service(&r, n, nil))
	}
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if got := r.list(); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	select {
	case err := <-g.Err():
		t.Fatalf("a clean stop reported %v", err)
	default:
	}
}

func TestGroupStopsWhatStartedWhenAPartFailsToStart(t *testing.T) {
	var r recorder
	g := NewGroup()
	g.Add("a", service(&r, "a", nil))
	g.Add("b", service(&r, "b", errors.New("no such port")))
	g.Add("c", service(&r, "c", nil))
	err := g.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "b: no such port") {
		t.Fatalf("Start: %v, want b's error", err)
	}
	if got, want := r.list(), []string{"start a", "stop a"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q (c never started)", got, want)
	}
}

func TestGroupWaitsForEachPartToBeReady(t *testing.T) {
	var r recorder
	release := make(chan struct{})
	g := NewGroup()
	g.Add("slow", Func(func(ctx context.Context, ready func()) error {
		<-release
		r.note("slow ready")
		ready()
		<-ctx.Done()
		return nil
	}))
	g.Add("next", service(&r, "next", nil))
	started := make(chan error, 1)
	go func() { started <- g.Start(t.Context()) }()
	time.Sleep(20 * time.Millisecond) // would "next" start before "slow" is ready?
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if got, want := r.list(), []string{"slow ready", "start next"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	_ = g.Stop()
}

func TestGroupReportsAPartThatDiesAfterStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"with an error", errors.New("etcd: member stopped"), "store: etcd: member stopped"},
		{"without one", nil, "store: ended on its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			die := make(chan struct{})
			g := NewGroup()
			g.Add("store", Func(func(ctx context.Context, ready func()) error {
				ready()
				select {
				case <-die:
					return tc.err
				case <-ctx.Done():
					return nil
				}
			}))
			if err := g.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			close(die)
			select {
			case err := <-g.Err():
				if err.Error() != tc.want {
					t.Fatalf("Err: %q, want %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the part's end was not reported")
			}
			if err := g.Stop(); (err != nil) != (tc.err != nil) {
				t.Fatalf("Stop: %v", err)
			}
		})
	}
}

func TestGroupStartEndsWithItsContext(t *testing.T) {
	var r recorder
	g := NewGroup()
	g.Add("a", service(&r, "a", nil))
	g.Add("never", Func(func(ctx context.Context, ready func()) error {
		<-ctx.Done()
		r.note("never stopped")
		return nil
	}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := g.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v, want the context's cause", err)
	}
	if got, want := r.list(), []string{"start a", "never stopped", "stop a"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A background controller that fails right after it is started, while a
// later part is still starting, fails the start: the server never reports
// ready without it.
func TestGroupStartFailsWhenAnEarlierPartDiesDuringALaterStart(t *testing.T) {
	var r recorder
	g := NewGroup()
	starting := make(chan struct{})
	// The controller dies while the slow part starts (dying before, it
	// would spare the group from starting that part at all).
	g.Add("controller", Background(func(context.Context) error { <-starting; return errors.New("cannot list Stages") }))
	g.Add("slow", Func(func(ctx context.Context, ready func()) error {
		close(starting)
		<-ctx.Done() // never ready on its own
		r.note("stop slow")
		return nil
	}))
	err := g.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "controller: cannot list Stages") {
		t.Fatalf("Start: %v, want the controller's failure", err)
	}
	if got := r.list(); !slices.Equal(got, []string{"stop slow"}) {
		t.Fatalf("events %q: the slow part was not stopped", got)
	}
}

func TestServiceStartsAndStops(t *testing.T) {
	var r recorder
	g := NewGroup()
	g.Add("svc", Service(func(context.Context) error { r.note("start"); return nil }, func() error { r.note("stop"); return errors.New("flush failed") }))
	g.Add("bad", Service(func(context.Context) error { return errors.New("no listener") }, nil))
	err := g.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "bad: no listener") || !strings.Contains(err.Error(), "svc: flush failed") {
		t.Fatalf("Start: %v", err)
	}
	if got := r.list(); !slices.Equal(got, []string{"start", "stop"}) {
		t.Fatalf("events %q", got)
	}
}

func TestGroupStartNamesAFailureOnce(t *testing.T) {
	g := NewGroup()
	g.Add("bad", Service(func(context.Context) error { return errors.New("no listener") }, nil))
	err := g.Start(t.Context())
	if err == nil || strings.Count(err.Error(), "no listener") != 1 {
		t.Fatalf("Start: %v, want the failure named once", err)
	}
}

// A group inside a group is one part: ready once all its parts are, and
// a failure of one of them is the outer group's, named by both.
func TestGroupRunsAsAPartOfAnotherGroup(t *testing.T) {
	var r recorder
	die := make(chan struct{})
	inner := NewGroup()
	inner.Add("stage controller", service(&r, "stages", nil))
	inner.Add("orchestrator", Func(func(ctx context.Context, ready func()) error {
		r.note("start orchestrator")
		ready()
		select {
		case <-die:
			return errors.New("cannot watch Promotions")
		case <-ctx.Done():
			return nil
		}
	}))
	outer := NewGroup()
	outer.Add("kargo", inner)
	outer.Add("executor", service(&r, "executor", nil))
	if err := outer.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := r.list(), []string{"start stages", "start orchestrator", "start executor"}; !slices.Equal(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	close(die)
	select {
	case err := <-outer.Err():
		if want := "kargo: orchestrator: cannot watch Promotions"; !strings.Contains(err.Error(), want) {
			t.Fatalf("Err: %q, want it to hold %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the inner part's failure was not reported")
	}
	if err := outer.Stop(); err == nil {
		t.Fatal("Stop returned no error for a failed part")
	}
	if got := r.list(); !slices.Contains(got, "stop stages") || !slices.Contains(got, "stop executor") {
		t.Fatalf("not everything stopped: %v", got)
	}
}

// The parts see the values of the context the group starts with, a
// Lease's fence among them (the Kargo controllers' writes were not
// fenced, their group having started them on a bare context), but stop
// only when the group stops them: the end of the start's context does
// not end them.
func TestGroupPartsKeepTheStartsValues(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "fence"))
	got := make(chan any, 1)
	stopped := make(chan struct{})
	g := NewGroup()
	g.Add("controller", Func(func(ctx context.Context, ready func()) error {
		got <- ctx.Value(key{})
		ready()
		<-ctx.Done()
		close(stopped)
		return nil
	}))
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "fence" {
		t.Fatalf("the part saw %v, want the start's value", v)
	}
	cancel()
	select {
	case <-stopped:
		t.Fatal("the start's context ended the part; only the group stops it")
	case <-time.After(100 * time.Millisecond):
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	<-stopped
}
