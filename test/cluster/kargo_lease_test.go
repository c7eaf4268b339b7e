package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"taskactions/internal/testenv/pg"
	"taskactions/test/cluster"
)

// executorLease is the Lease of the executor, which the Kargo controllers
// run beside (a Promotion's steps leave their outputs on its disk).
const executorLease = "taskactions-executor"

// TestKargoControllersFailOver runs two replicas of the chart installed
// with kargoControllers and several replicas (which the chart used to
// refuse): one of them runs the Stage controller and the Promotion
// orchestrator, beside the executor under its Lease. It is SIGKILLed while
// a Promotion runs its second step: the other takes the Lease, finds no
// working directory of the Promotion on its disk, starts the Promotion over
// as Kargo does (checkStartedOver), and the Promotion ends Succeeded.
// Then the
// leader is paused (SIGSTOP) past its Lease while another Promotion runs,
// and resumed once a replacement leads: it writes nothing to Kargo's
// objects after. Last the leader is stopped with SIGTERM, as a rolling
// update does: it releases its Lease and another replica takes it without
// waiting for the lease to run out (the times are logged, for the note;
// no timed assertion).
func TestKargoControllersFailOver(t *testing.T) {
	ctx := t.Context()
	const ns, release = "kargo-ha", "kargo-ha"
	manifest, err := installChart(ctx, ns, release, "kargoControllers=true", "replicaCount=2", "history.dsnSecret.name=pg")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := kube.ServiceAccountKubeconfig(ctx, ns, release)
	if err != nil {
		t.Fatal(err)
	}
	pgc, err := pg.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pgc.Stop)
	dsn, err := pgc.CreateDatabase("kargoha")
	if err != nil {
		t.Fatal(err)
	}
	args := append(argsOf(t, manifest), "--history-dsn="+dsn, "--executor-task-types=*")
	start := func() *cluster.Server {
		s, err := cluster.StartServer(ctx, serverBin, t.TempDir(), kubeconfig, readyTimeout, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		return s
	}
	servers := []*cluster.Server{start(), start()}

	leader := holderOf(ctx, t, ns, executorLease, servers)
	other := servers[1-leader]
	if _, err := kube.Kube.CoordinationV1().Leases(ns).Get(ctx, "taskactions-kargo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Kargo controllers beside the executor took a Lease of their own (taskactions-kargo): %v", err)
	}
	f := &features{s: other, project: "kargoha", domain: "dev"}
	promo := startSlowPromotion(ctx, t, f)
	servers[leader].Kill()
	killed := time.Now()
	holderOf(ctx, t, ns, executorLease, []*cluster.Server{other})
	phase := waitPromotion(ctx, t, f, promo, "Succeeded", "Failed", "Errored", "Aborted")
	if phase != "Succeeded" {
		t.Fatalf("the Promotion across the failover ended %s; log of the new leader:\n%s", phase, other.Log())
	}
	t.Logf("Promotion in flight across a SIGKILL of the Kargo controllers' leader: Succeeded %s after the kill", time.Since(killed).Round(time.Millisecond))
	checkStartedOver(ctx, t, f, promo)

	// A replacement, as the Deployment would start, takes over from the
	// leader paused past its Lease.
	replacement := start()
	pauseKargoLeader(ctx, t, ns, other, replacement)

	// A rolling update stops the leader (now the replacement) gracefully.
	live := []*cluster.Server{other, replacement}
	if holderOf(ctx, t, ns, executorLease, live) != 1 {
		t.Fatal("the Lease moved back to the paused replica")
	}
	stopped := time.Now()
	if err := replacement.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	exited := time.Since(stopped)
	holderOf(ctx, t, ns, executorLease, []*cluster.Server{other})
	t.Logf("handoff of %s on SIGTERM: the other replica holds it %s after the signal (the old leader took %s to exit)",
		executorLease, time.Since(stopped).Round(time.Millisecond), exited.Round(time.Millisecond))
}

// checkStartedOver checks that the Promotion started over on the new
// leader, whose disk does not have the working directory its steps shared
// on the dead one, as Kargo's controller does with a fresh working
// directory: the sleep in flight at the kill ended ABORTED without running
// again, and every step ran again as an action of start 2 (the last one
// reading the first one's output through status.state, as before).
func checkStartedOver(ctx context.Context, t *testing.T, f *features, promo string) {
	t.Helper()
	var p struct {
		Metadata struct{ Annotations map[string]string }
		Status   struct{ State map[string]map[string]any }
	}
	if err := f.s.DoJSON(ctx, http.MethodGet, fmt.Sprintf("/api/v1/projects/%s/promotions/%s", f.project, promo), nil, &p, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if got := p.Metadata.Annotations["taskactions.io/promotion-start"]; got != "2" {
		t.Errorf("the Promotion's start after the failover is %q, want 2", got)
	}
	if got := p.Status.State["after"]["seen"]; got != "before the failover" {
		t.Errorf("the last step read %q of the first step's output, want %q (status.state: %v)", got, "before the failover", p.Status.State)
	}
	acts, err := listRunActions(ctx, f, promo)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range acts {
		got[a.ActionID.Name] = a.Phase
		if a.ActionID.Name == "step-2" && !strings.Contains(a.AbortReason, "working directory is gone") {
			t.Errorf("step-2's abort reason %q, want the working directory's loss", a.AbortReason)
		}
	}
	want := map[string]string{"promotion": "SUCCEEDED", "step-1": "SUCCEEDED", "step-2": "ABORTED",
		"step-1-start-2": "SUCCEEDED", "step-2-start-2": "SUCCEEDED", "step-3-start-2": "SUCCEEDED"}
	if !maps.Equal(got, want) {
		t.Errorf("the run's actions %v, want %v", got, want)
	}
}

// runAction is what the failover tests read of a Promotion's step.
type runAction struct {
	ActionID    struct{ Name string } `json:"actionId"`
	Phase       string
	AbortReason string
	PluginPhase string
}

// listRunActions lists the actions of a Promotion's run.
func listRunActions(ctx context.Context, f *features, promo string) ([]runAction, error) {
	parts := strings.Split(promo, ".")
	var acts struct{ Items []runAction }
	path := fmt.Sprintf("/api/v1/projects/%s/domains/kargo/runs/%s/actions", f.project, strings.ToLower(parts[len(parts)-2]))
	err := f.s.DoJSON(ctx, http.MethodGet, path, nil, &acts, http.StatusOK)
	return acts.Items, err
}

// describeRun describes a Promotion's run for a failure's message.
func describeRun(ctx context.Context, f *features, promo string) string {
	acts, err := listRunActions(ctx, f, promo)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%+v", acts)
}

// pauseKargoLeader pauses the leader (SIGSTOP) while a Promotion runs,
// until the other replica has taken the Lease over, and resumes it: the
// Promotion ends Succeeded, and from the resume on the paused replica
// writes nothing to Kargo's objects (its fence has passed).
func pauseKargoLeader(ctx context.Context, t *testing.T, ns string, leader, next *cluster.Server) {
	t.Helper()
	f := &features{s: next, project: "kargopause", domain: "dev"}
	promo := startSlowPromotion(ctx, t, f)
	if err := leader.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	holderOf(ctx, t, ns, executorLease, []*cluster.Server{next})
	resumed := time.Now()
	if err := leader.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("the Lease moved %s after the leader was paused", resumed.Sub(paused).Round(time.Millisecond))
	if phase := waitPromotion(ctx, t, f, promo, "Succeeded", "Failed", "Errored", "Aborted"); phase != "Succeeded" {
		t.Fatalf("the Promotion across the pause ended %s; its run: %s\nlog of the new leader:\n%s\nlog of the paused one:\n%s",
			phase, describeRun(ctx, f, promo), next.Log(), leader.Log())
	}
	time.Sleep(3 * time.Second) // what the resumed replica had in hand has had its chance
	events, err := kube.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	checkFenced(t, events, leader, ns, resumed, func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.APIGroup == "kargo.akuity.io"
	})
}

// argsOf is the Deployment's arguments in manifest, but for the
// listeners, the data dir and the history store, which each test server
// has its own of.
func argsOf(t testing.TB, manifest string) []string {
	t.Helper()
	for _, d := range documents(manifest) {
		var dep appsv1.Deployment
		mustUnmarshal(t, d, &dep)
		if dep.Kind != "Deployment" {
			continue
		}
		var args []string
		for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
			flag, _, _ := strings.Cut(a, "=")
			switch flag {
			case "--listen", "--metrics-listen", "--data-dir", "--history-dsn":
				continue
			}
			args = append(args, a)
		}
		return args
	}
	t.Fatal("the chart has no Deployment")
	return nil
}

// holderOf waits until the Lease names one of servers (nil: not
// running) and returns its index.
func holderOf(ctx context.Context, t *testing.T, ns, name string, servers []*cluster.Server) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		l, err := kube.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			for i, s := range servers {
				if s != nil && strings.Contains(s.Log(), `"identity":"`+*l.Spec.HolderIdentity+`"`) {
					return i
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no running server holds the Lease %s/%s", ns, name)
	return -1
}

// startSlowPromotion creates a Stage whose promotion keeps an output,
// sleeps, and reads the output back, Freight for it, and a Promotion, and
// waits until the Promotion sleeps (its second step).
func startSlowPromotion(ctx context.Context, t *testing.T, f *features) string {
	t.Helper()
	steps := []any{
		map[string]any{"uses": "compose-output", "as": "before", "config": map[string]any{"value": "before the failover"}},
		map[string]any{"uses": "sleep", "as": "wait", "config": map[string]any{"duration": "6s"}},
		map[string]any{"uses": "compose-output", "as": "after", "config": map[string]any{"seen": "${{ outputs.before.value }}"}},
	}
	promoteWith(ctx, t, f, steps)
	waitStep(ctx, t, f, f.promo, 1)
	return f.promo
}

// promoteWith creates the Stage "test" with steps, Freight for it, and a
// Promotion of that Freight (f.promo).
func promoteWith(ctx context.Context, t *testing.T, f *features, steps []any) {
	t.Helper()
	if err := f.s.DoJSON(ctx, http.MethodPost, f.stagesPath(), stageOf(steps), nil, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	if err := f.createFreight(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.promote(ctx); err != nil {
		t.Fatal(err)
	}
}

// stageOf is the Stage "test", promoted from the Warehouse w with steps.
func stageOf(steps []any) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "test"},
		"spec": map[string]any{
			"requestedFreight": []any{map[string]any{
				"origin": map[string]any{"kind": "Warehouse", "name": "w"}, "sources": map[string]any{"direct": true},
			}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": steps}},
		},
	}
}

// waitStep waits until the Promotion runs step i. The steps before it have
// ended, and their ends are in its status (the orchestrator records them in
// the write that decides step i): a replica stopped now stops inside step i.
func waitStep(ctx context.Context, t *testing.T, f *features, name string, i int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last []struct{ Alias, Status string }
	for time.Now().Before(deadline) {
		var p struct {
			Status struct {
				StepExecutionMetadata []struct{ Alias, Status string }
			}
		}
		if err := f.s.DoJSON(ctx, http.MethodGet, fmt.Sprintf("/api/v1/projects/%s/promotions/%s", f.project, name), nil, &p, http.StatusOK); err == nil {
			last = p.Status.StepExecutionMetadata
			if len(last) == i+1 && last[i].Status == "Running" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Promotion %s does not run step %d after 2 minutes: steps %+v; log:\n%s", name, i, last, f.s.Log())
}

// waitPromotion waits until the Promotion is in one of phases and
// returns it.
func waitPromotion(ctx context.Context, t *testing.T, f *features, name string, phases ...string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		var p struct {
			Status struct {
				Phase, Message        string
				StepExecutionMetadata []struct{ Alias, Status, Message string }
			}
		}
		if err := f.s.DoJSON(ctx, http.MethodGet, fmt.Sprintf("/api/v1/projects/%s/promotions/%s", f.project, name), nil, &p, http.StatusOK); err == nil {
			last = p.Status.Phase
			for _, ph := range phases {
				if last == ph {
					// What a failure needs to say why.
					t.Logf("Promotion %s ended %s %q, its steps %+v", name, last, p.Status.Message, p.Status.StepExecutionMetadata)
					return last
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Promotion %s is %q, not %v, after 2 minutes; log:\n%s", name, last, phases, f.s.Log())
	return ""
}
