package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"taskactions/internal/testenv/pg"
	"taskactions/test/cluster"
)

// replicas are three servers on the cluster as the chart runs them: the
// chart's ServiceAccount and arguments, one PostgreSQL history store.
type replicas struct {
	t     *testing.T
	extra []string // arguments besides the chart's

	mu      sync.Mutex
	servers [3]*cluster.Server
}

var identityRE = regexp.MustCompile(`"identity":"([^"]+)","lease":"[^"]+","time":"[^"]+","message":"executor: standing for election"`)

func (r *replicas) start(i int) {
	r.t.Helper()
	s := startChartServer(r.t, r.extra...)
	r.mu.Lock()
	r.servers[i] = s
	r.mu.Unlock()
}

// identity is the replica's executor identity, from its log.
func identity(s *cluster.Server) string {
	m := identityRE.FindStringSubmatch(s.Log())
	if m == nil {
		return ""
	}
	return m[1]
}

// live returns a running replica other than skip (-1: any).
func (r *replicas) live(skip int) *cluster.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.servers {
		if i != skip && s != nil {
			return s
		}
	}
	return nil
}

// leader waits until the Lease names a running replica and returns its
// index and identity.
func (r *replicas) leader(ctx context.Context) (int, string) {
	r.t.Helper()
	return waitLeader(ctx, r.t, func() []*cluster.Server {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Clone(r.servers[:])
	})
}

// waitLeader waits until the executor's Lease names one of the running
// servers (nil: not running) and returns its index and identity.
func waitLeader(ctx context.Context, t testing.TB, servers func() []*cluster.Server) (int, string) {
	t.Helper()
	for {
		if holder := leaseHolder(ctx); holder != "" {
			for i, s := range servers() {
				if s != nil && identity(s) == holder {
					return i, holder
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no running server holds the executor's Lease")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaseHolder is the executor Lease's holder ("" when unread).
func leaseHolder(ctx context.Context) string {
	lease, err := kube.Kube.CoordinationV1().Leases(releaseNamespace).Get(ctx, "taskactions-executor", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestThreeReplicasOneExecutor runs three replicas; one executes. Five
// times, in the middle of a run of 500 sleep, echo and process actions,
// the executing replica is killed (SIGKILL): another takes over, every
// action ends in exactly one terminal phase, a stream that followed the
// killed replica resumes on another with its Last-Event-ID and ends
// showing what REST shows, and no replica's write reaches the API server
// after it was killed. Then the executing replica is paused (SIGSTOP)
// past its Lease and resumed: it must not write again (the fence).
func TestThreeReplicasOneExecutor(t *testing.T) {
	pgc, err := pg.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pgc.Stop) // after the servers' own cleanups, which come later
	dsn, err := pgc.CreateDatabase("replicas")
	if err != nil {
		t.Fatal(err)
	}
	r := &replicas{t: t, extra: []string{"--history-dsn=" + dsn, "--executor-process=true"}}
	for i := range r.servers {
		r.start(i)
	}

	var failovers []time.Duration
	for cycle := range 5 {
		failovers = append(failovers, killInTheMiddle(t, r, fmt.Sprintf("kill%d", cycle)))
	}
	slices.Sort(failovers)
	t.Logf("failover, kill to the first status write of the new executor, over %d kills: p50 %s, max %s (all: %v)",
		len(failovers), failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond), failovers)

	pauseThePastLease(t, r)
}

const runSize = 500

// enqueueRun enqueues a root echo action and runSize-1 children: sleeps
// of 1 to 4 s, echoes, and processes of 0.2 s.
func enqueueRun(ctx context.Context, s *cluster.Server, run string) error {
	f := &features{s: s, project: "replicas", domain: "dev"}
	if err := f.enqueueAction(ctx, run, "a0", "", "echo", nil); err != nil {
		return err
	}
	for i := 1; i < runSize; i++ {
		name := fmt.Sprintf("c%03d", i)
		var err error
		switch i % 3 {
		case 0:
			err = f.enqueueAction(ctx, run, name, "a0", "sleep", map[string]any{"duration": fmt.Sprintf("%ds", 1+i%4)})
		case 1:
			err = f.enqueueAction(ctx, run, name, "a0", "echo", nil)
		default:
			err = enqueueProcess(ctx, f, run, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func enqueueProcess(ctx context.Context, f *features, run, name string) error {
	return f.enqueueTemplate(ctx, run, name, "a0", map[string]any{
		"type": "process", "container": map[string]any{"command": []string{"/bin/sh", "-c", "sleep 0.2"}},
	})
}

type restAction struct {
	ActionID     struct{ Name string } `json:"actionId"`
	Phase        string
	Attempts     int
	PhaseHistory []struct{ Phase string } `json:"phaseHistory"`
}

func runActions(ctx context.Context, s *cluster.Server, run string) ([]restAction, error) {
	var page struct{ Items []restAction }
	err := s.DoJSON(ctx, http.MethodGet, "/api/v1/projects/replicas/domains/dev/runs/"+run+"/actions?limit=10000", nil, &page, http.StatusOK)
	return page.Items, err
}

var terminal = map[string]bool{"SUCCEEDED": true, "FAILED": true, "ABORTED": true, "TIMED_OUT": true, "RECOVERED": true}

// waitTerminal waits until at least n actions of the run are terminal, as
// replica s shows them.
func waitTerminal(ctx context.Context, s *cluster.Server, run string, n int, timeout time.Duration) ([]restAction, error) {
	deadline := time.Now().Add(timeout)
	for {
		items, err := runActions(ctx, s, run)
		done := 0
		for _, a := range items {
			if terminal[a.Phase] {
				done++
			}
		}
		if err == nil && done >= n {
			return items, nil
		}
		if time.Now().After(deadline) {
			return items, fmt.Errorf("%d of %d actions terminal after %s (err %v)", done, len(items), timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killInTheMiddle runs one run of runSize actions and kills the executing
// replica when a fifth of them are done; it returns the failover time.
func killInTheMiddle(t *testing.T, r *replicas, run string) time.Duration {
	ctx := t.Context()
	leaderIdx, leaderID := r.leader(ctx)
	// A stream that starts on the replica about to die, as a dashboard
	// might, and follows the run wherever it can.
	follower := newRunFollower("replicas", "dev", run)
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	first := true
	go follower.follow(fctx, func() *cluster.Server {
		if first {
			first = false
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.servers[leaderIdx]
		}
		time.Sleep(100 * time.Millisecond)
		return r.live(leaderIdx)
	})
	other := r.live(leaderIdx)
	began := time.Now()
	if err := enqueueRun(ctx, other, run); err != nil {
		t.Fatal(err)
	}
	if _, err := waitTerminal(ctx, other, run, runSize/5, time.Minute); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r.servers[leaderIdx].Kill()
	r.mu.Lock()
	r.servers[leaderIdx] = nil
	r.mu.Unlock()
	newIdx, newID := r.leader(ctx)
	lease, err := kube.Kube.CoordinationV1().Leases(releaseNamespace).Get(ctx, "taskactions-executor", metav1.GetOptions{})
	if err != nil || lease.Spec.AcquireTime == nil {
		t.Fatalf("the Lease after the kill: %v", err)
	}
	t.Logf("%s: killed %s; %s took the Lease %s after the kill", run, leaderID, newID, lease.Spec.AcquireTime.Sub(killed).Round(time.Millisecond))
	r.start(leaderIdx) // as a Deployment would replace the pod

	items, err := waitTerminal(ctx, r.servers[newIdx], run, runSize, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	checkOneTerminalPhase(t, run, items)
	checkStreamMatches(t, follower, items)
	return checkWriters(t, run, leaderID, newID, began, killed)
}

// checkOneTerminalPhase: every action finished, once: its history has
// one terminal phase, the last.
func checkOneTerminalPhase(t *testing.T, run string, items []restAction) {
	t.Helper()
	if len(items) != runSize {
		t.Fatalf("%s: %d actions, want %d", run, len(items), runSize)
	}
	for _, a := range items {
		var terminals []string
		for _, h := range a.PhaseHistory {
			if terminal[h.Phase] {
				terminals = append(terminals, h.Phase)
			}
		}
		if len(terminals) != 1 || !terminal[a.Phase] || terminals[0] != a.Phase {
			t.Errorf("%s/%s: phase %s, terminal phases in its history %v; want exactly one", run, a.ActionID.Name, a.Phase, terminals)
		}
	}
}

// checkStreamMatches: the stream that followed the run across the kill
// shows every action in the phase REST shows.
func checkStreamMatches(t *testing.T, f *runFollower, items []restAction) {
	t.Helper()
	want := map[string]string{}
	for _, a := range items {
		want[a.ActionID.Name] = a.Phase
	}
	deadline := time.After(10 * time.Second)
	for {
		got := f.snapshot()
		if mapsEqual(got, want) {
			f.mu.Lock()
			t.Logf("the stream matched REST after %d connections and %d resets", f.connects, f.resets)
			f.mu.Unlock()
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			var diff []string
			for name, p := range want {
				if got[name] != p {
					diff = append(diff, fmt.Sprintf("%s: stream %q, REST %q", name, got[name], p))
				}
			}
			slices.Sort(diff)
			t.Fatalf("the stream shows %d actions, REST %d; %d differ: %s", len(got), len(want), len(diff), strings.Join(diff[:min(5, len(diff))], "; "))
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// inFlight bounds how long after a kill the replica's last requests may
// still arrive.
const inFlight = time.Second

// checkWriters reads the API server's audit log: exactly one replica
// wrote statuses at a time (the leader until the kill, then the new one),
// the killed replica wrote nothing after it was killed, and the new
// leader's first status write gives the failover time.
func checkWriters(t *testing.T, run, killedID, newID string, began, killed time.Time) time.Duration {
	t.Helper()
	events, err := kube.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var firstNew time.Time
	for _, ev := range events {
		if ev.ObjectRef.Resource != "taskactions" {
			continue
		}
		if ev.ObjectRef.Subresource == "status" && ev.RequestReceived.After(began) {
			executor := newID
			if !ev.RequestReceived.After(killed.Add(inFlight)) {
				executor = killedID
				if ev.RequestReceived.After(killed) && strings.HasSuffix(ev.UserAgent, "/"+newID) {
					executor = newID
				}
			}
			if !strings.HasSuffix(ev.UserAgent, "/"+executor) {
				t.Errorf("%s: status of %s written by %s at %s; only %s executed then", run, ev.ObjectRef.Name, ev.UserAgent, ev.RequestReceived, executor)
			}
		}
		if !ev.RequestReceived.After(killed) {
			continue
		}
		switch {
		// Requests the replica sent just before it died reach the API
		// server's handlers up to tens of milliseconds later, under load.
		case strings.HasSuffix(ev.UserAgent, "/"+killedID) && ev.RequestReceived.After(killed.Add(inFlight)):
			t.Errorf("%s: %s %s/%s by the killed replica at %s, after its kill at %s", run, ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.RequestReceived, killed)
		case firstNew.IsZero() && strings.HasSuffix(ev.UserAgent, "/"+newID) && ev.ObjectRef.Subresource == "status" && ev.ResponseStatus.Code == http.StatusOK:
			firstNew = ev.RequestReceived
		}
	}
	if firstNew.IsZero() {
		t.Fatalf("%s: no status write by the new executor %s after the kill", run, newID)
	}
	return firstNew.Sub(killed)
}

// pauseThePastLease stops the executing replica (SIGSTOP) while a run is
// in progress, until another has taken the Lease over, and resumes it:
// from then on it must not write at all.
func pauseThePastLease(t *testing.T, r *replicas) {
	ctx := t.Context()
	idx, _ := r.leader(ctx)
	other := r.live(idx)
	if err := enqueueRun(ctx, other, "pause"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitTerminal(ctx, other, "pause", runSize/5, time.Minute); err != nil {
		t.Fatal(err)
	}
	paused := r.servers[idx]
	if err := paused.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for {
		newIdx, _ := r.leader(ctx)
		if newIdx != idx {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	resumed := time.Now()
	if err := paused.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := waitTerminal(ctx, other, "pause", runSize, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // what the resumed replica had in hand has had its chance
	events, err := kube.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	// The executor writes with update (status, finalizers). Every
	// replica's manager also patches the terminal-status-recorded label
	// once history has an action's final state: idempotent, and no status.
	checkFenced(t, events, paused, releaseNamespace, resumed, func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Resource == "taskactions" && ev.Verb == "update"
	})
	status, body, err := paused.Do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("metrics of the resumed replica: %d %v", status, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "taskactions_executor_fenced_writes_total") {
			t.Logf("the resumed replica: %s", line)
		}
	}
}
