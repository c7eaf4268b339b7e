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
