package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/taskactions/actionstest"
	"taskactions/pkg/client"
)

// A cluster running both Flyte and this server, as far as one process
// can show it: Flyte's objects and statuses (testdata/flyte-statuses.yaml,
// written by Flyte's own code) read here as Flyte reads them, Flyte's
// client finds what this server stores, and each side keeps its own
// bookkeeping.

// kubeOf is a client of s's embedded control plane, as Flyte's services
// and kubectl are.
func kubeOf(t *testing.T, s *server) versioned.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func flyteReading(ta *v1.TaskAction, key string) client.Phase {
	return client.Phase(strings.TrimPrefix(ta.Annotations["fixture.flytecheck/"+key], "ACTION_PHASE_"))
}

// Every object and status Flyte writes reads through the API as Flyte's
// Actions service reads it (a new action: QUEUED here, UNSPECIFIED
// there); deleted, as Flyte aborts, each reads as Flyte's watcher reads
// the deletion: unfinished ones ABORTED, finished ones as they ended.
func TestFlyteStatusesReadAsInFlyte(t *testing.T) {
	ctx := context.Background()
	kc := kubeOf(t, srv).FlyteV1().TaskActions("flyte")
	fixtures := actionstest.FlyteFixtures(t)
	var rootUID string
	for _, f := range fixtures {
		ta := f.DeepCopy()
		if len(ta.OwnerReferences) > 0 {
			ta.OwnerReferences[0].UID = types.UID(rootUID)
		}
		out, err := kc.Create(ctx, ta, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", ta.Name, err)
		}
		if ta.Spec.ParentActionName == nil {
			rootUID = string(out.UID)
		}
		if len(f.Status.Conditions) > 0 {
			out.Status = f.Status
			if _, err := kc.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s: %v", ta.Name, err)
			}
		}
	}
	get := func(ta *v1.TaskAction) *client.Action {
		r, err := srv.api.GetActionWithResponse(ctx, ta.Spec.Project, ta.Spec.Domain, ta.Spec.RunName, ta.Spec.ActionName)
		if err != nil || r.JSON200 == nil {
			return nil
		}
		return r.JSON200
	}
	for _, f := range fixtures {
		want := flyteReading(f, "get-phase-from-conditions")
		if len(f.Status.Conditions) == 0 {
			want = client.QUEUED
		}
		var a *client.Action
		eventually(t, 10*time.Second, f.Name+" read through the API", func() bool {
			a = get(f)
			return a != nil && (a.Phase == want || len(a.Conditions) == len(f.Status.Conditions))
		})
		if a.Phase != want {
			t.Errorf("%s: %s through the API, Flyte reads %s", f.Name, a.Phase, want)
		}
	}
	// Flyte's abort: delete the object (its children with it).
	for i := len(fixtures) - 1; i >= 0; i-- {
		if err := kc.Delete(ctx, fixtures[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, f := range fixtures {
		want := flyteReading(f, "phase-when-deleted")
		var a *client.Action
		eventually(t, 10*time.Second, f.Name+" deleted, read from history", func() bool {
			_, err := kc.Get(ctx, f.Name, metav1.GetOptions{})
			a = get(f)
			return apierrors.IsNotFound(err) && a != nil && a.Phase == want
		})
	}
}

// An abort through this server's API of an action Flyte enqueued aborts
// it as Flyte does: the object is deleted (Flyte's executor then stops
// its task; Flyte's Actions service reads ABORTED), and the API keeps it
// ABORTED with the reason given.
func TestAbortOfFlytesActionThroughTheAPI(t *testing.T) {
	ctx := context.Background()
	kc := kubeOf(t, srv).FlyteV1().TaskActions("flyte")
	var running *v1.TaskAction
	for _, f := range actionstest.FlyteFixtures(t) {
		if f.Spec.ActionName == "running" {
			running = f.DeepCopy()
		}
	}
	run := newRun()
	running.Name, running.OwnerReferences, running.Annotations = run.Name+"-a0", nil, nil
	running.Spec.Project, running.Spec.Domain, running.Spec.RunName, running.Spec.ActionName, running.Spec.ParentActionName = run.Project, run.Domain, run.Name, run.Name, nil
	out, err := kc.Create(ctx, running, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.Status = running.Status
	if _, err := kc.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the API to show it RUNNING", func() bool {
		r, err := srv.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, run.Name)
		return err == nil && r.JSON200 != nil && r.JSON200.Phase == client.RUNNING
	})
	reason := "stop it from here"
	r, err := srv.api.AbortActionWithResponse(ctx, run.Project, run.Domain, run.Name, run.Name, client.AbortRequest{Reason: &reason})
	if err != nil || r.StatusCode() != http.StatusAccepted {
		t.Fatalf("abort: %v %s", err, r.Body)
	}
	if _, err := kc.Get(ctx, running.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the object after the abort: %v, want it deleted (Flyte's abort)", err)
	}
	eventually(t, 10*time.Second, "ABORTED with its reason", func() bool {
		g, err := srv.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, run.Name)
		return err == nil && g.JSON200 != nil && g.JSON200.Phase == client.ABORTED && g.JSON200.AbortReason != nil && *g.JSON200.AbortReason == reason
	})
}

// flyteWatcherReads is how Flyte's Actions service reads a watch event of
// a TaskAction (buildActionUpdate): GetPhaseFromConditions, and for a
// deletion of an action that had not finished, ABORTED.
func flyteWatcherReads(ev watch.Event) (name string, phase v1.Phase) {
	ta := ev.Object.(*v1.TaskAction)
	phase = v1.FlytePhaseOf(ta.Status.Conditions)
	if ev.Type == watch.Deleted && !phase.Terminal() {
		phase = v1.PhaseAborted
	}
	return ta.Spec.ActionName, phase
}

// An abort through this server of its own actions reads the same through
// Flyte's Actions service, which watches the objects, as through this
// server: the aborted actions ABORTED, never FAILED on the way (a
// terminal condition with reason Aborted would be), the finished one as
// it ended; here with the reason kept, and every object gone from the
// control plane, as after Flyte's own abort.
func TestOurAbortReadsTheSameInFlyte(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	enqueue(t, srv, run, "c1", "a0")
	enqueue(t, srv, run, "c2", "a0")
	enqueue(t, srv, run, "g1", "c1")
	putStatus(t, srv, run, "c1", 1, client.RUNNING)
	putStatus(t, srv, run, "c2", 1, client.SUCCEEDED)

	// Watched as Flyte's Actions service watches them (from now on: the
	// objects exist; the watch starts at the list's version).
	kc := kubeOf(t, srv).FlyteV1().TaskActions(run.Project + "-" + run.Domain)
	sel := metav1.ListOptions{LabelSelector: "flyte.org/run=" + run.Name}
	list, err := kc.List(ctx, sel)
	if err != nil || len(list.Items) != 4 {
		t.Fatalf("list: %v, %d objects", err, len(list.Items))
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := kc.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	reason := "stopped from our API"
	r, err := srv.api.AbortActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", client.AbortRequest{Reason: &reason})
	if err != nil || r.JSON202 == nil || r.JSON202.Phase != client.ABORTED {
		t.Fatalf("abort: %v %s", err, r.Body)
	}

	want := map[string]v1.Phase{"a0": v1.PhaseAborted, "c1": v1.PhaseAborted, "g1": v1.PhaseAborted, "c2": v1.PhaseSucceeded}
	flyte := map[string]v1.Phase{}
	deleted := 0
	timeout := time.After(20 * time.Second)
	for deleted < len(want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			name, phase := flyteWatcherReads(ev)
			if phase == v1.PhaseFailed {
				t.Errorf("Flyte's Actions service reads %s FAILED (%s event)", name, ev.Type)
			}
			flyte[name] = phase
			if ev.Type == watch.Deleted {
				deleted++
			}
		case <-timeout:
			t.Fatalf("%d of %d objects deleted; Flyte reads %v", deleted, len(want), flyte)
		}
	}
	for name, phase := range want {
		if flyte[name] != phase {
			t.Errorf("Flyte's Actions service reads %s %s, want %s", name, flyte[name], phase)
		}
		eventually(t, 10*time.Second, name+" "+string(phase)+" through the API", func() bool {
			g, err := srv.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, name)
			if err != nil || g.JSON200 == nil || string(g.JSON200.Phase) != string(phase) {
				return false
			}
			return phase != v1.PhaseAborted || g.JSON200.AbortReason != nil && *g.JSON200.AbortReason == reason
		})
	}
}
