package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"taskactions/internal/testenv/pg"
	"taskactions/test/cluster"
)

// TestKargoControllersFailOver runs two replicas of the chart installed
// with kargoControllers and several replicas (which the chart used to
// refuse): one of them runs the Stage controller and the Promotion
// orchestrator, the holder of the Lease taskactions-kargo. It is
// SIGKILLed while a Promotion runs: the other takes the Lease and the
// Promotion ends Succeeded. Then the executor's leader is stopped with
// SIGTERM, as a rolling update does: it releases its Lease and another
// replica takes it without waiting for the lease to run out (the time is
// logged, for the note; no timed assertion).
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
	servers := make([]*cluster.Server, 2)
	for i := range servers {
		if servers[i], err = cluster.StartServer(ctx, serverBin, t.TempDir(), kubeconfig, readyTimeout, args...); err != nil {
			t.Fatal(err)
		}
		s := servers[i]
		t.Cleanup(func() { _ = s.Stop() })
	}

	leader := holderOf(ctx, t, ns, "taskactions-kargo", servers)
	other := servers[1-leader]
	f := &features{s: other, project: "kargoha", domain: "dev"}
	promo := startSlowPromotion(ctx, t, f)
	servers[leader].Kill()
	killed := time.Now()
	holderOf(ctx, t, ns, "taskactions-kargo", []*cluster.Server{other})
	phase := waitPromotion(ctx, t, f, promo, "Succeeded", "Failed", "Errored", "Aborted")
	if phase != "Succeeded" {
		t.Fatalf("the Promotion across the failover ended %s; log of the new leader:\n%s", phase, other.Log())
	}
	t.Logf("Promotion in flight across a SIGKILL of the Kargo controllers' leader: Succeeded %s after the kill", time.Since(killed).Round(time.Millisecond))

	// A replacement, as the Deployment would start; then a rolling update
	// stops the leader of both Leases gracefully.
	replacement, err := cluster.StartServer(ctx, serverBin, t.TempDir(), kubeconfig, readyTimeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replacement.Stop() })
	live := []*cluster.Server{other, replacement}
	for _, lease := range []string{"taskactions-executor", "taskactions-kargo"} {
		if holderOf(ctx, t, ns, lease, live) != 0 {
			t.Fatalf("%s moved to the replacement before the stop", lease)
		}
	}
	stopped := time.Now()
	if err := other.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	exited := time.Since(stopped)
	for _, lease := range []string{"taskactions-executor", "taskactions-kargo"} {
		holderOf(ctx, t, ns, lease, []*cluster.Server{replacement})
		t.Logf("handoff of %s on SIGTERM: the replacement holds it %s after the signal (the old leader took %s to exit)",
			lease, time.Since(stopped).Round(time.Millisecond), exited.Round(time.Millisecond))
	}
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

// startSlowPromotion creates a Stage whose promotion sleeps, Freight for
// it, and a Promotion, and waits until the Promotion runs.
func startSlowPromotion(ctx context.Context, t *testing.T, f *features) string {
	t.Helper()
	stage := map[string]any{
		"metadata": map[string]any{"name": "test"},
		"spec": map[string]any{
			"requestedFreight": []any{map[string]any{
				"origin": map[string]any{"kind": "Warehouse", "name": "w"}, "sources": map[string]any{"direct": true},
			}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": []any{
				map[string]any{"uses": "sleep", "as": "wait", "config": map[string]any{"duration": "6s"}},
				map[string]any{"uses": "echo", "as": "done"},
			}}},
		},
	}
	if err := f.s.DoJSON(ctx, http.MethodPost, f.stagesPath(), stage, nil, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	if err := f.createFreight(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.promote(ctx); err != nil {
		t.Fatal(err)
	}
	waitPromotion(ctx, t, f, f.promo, "Running")
	return f.promo
}

// waitPromotion waits until the Promotion is in one of phases and
// returns it.
func waitPromotion(ctx context.Context, t *testing.T, f *features, name string, phases ...string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		var p struct {
			Status struct{ Phase string }
		}
		if err := f.s.DoJSON(ctx, http.MethodGet, fmt.Sprintf("/api/v1/projects/%s/promotions/%s", f.project, name), nil, &p, http.StatusOK); err == nil {
			last = p.Status.Phase
			for _, ph := range phases {
				if last == ph {
					return last
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Promotion %s is %q, not %v, after 2 minutes; log:\n%s", name, last, phases, f.s.Log())
	return ""
}
