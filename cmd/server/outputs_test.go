package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// A run deleted through the API leaves this replica's disk at the next
// sweep (--output-sweep): its output dirs, logs among them, go. A run that
// stays, retired to history (--retention), keeps its dirs, and its log is
// still served.
func TestDeletedRunsLeaveTheDisk(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	p := startServer(t, "--listen", addr, "--data-dir", dataDir, "--output-sweep", "1s", "--retention", "1s")
	waitReady(t, p, addr)
	c := apiClient(t, addr, dataDir)
	keep := client.RunIdentifier{Project: "sweep", Domain: "dev", Name: "keep"}
	gone := client.RunIdentifier{Project: "sweep", Domain: "dev", Name: "gone"}
	for _, r := range []client.RunIdentifier{keep, gone} {
		enqueueScript(t, c, r, "a0", "echo hello")
		if a := waitEnded(t, c, r, "a0"); a.Phase != client.SUCCEEDED {
			t.Fatalf("%s/a0 ended %s", r.Name, a.Phase)
		}
	}
	dirOf := func(r client.RunIdentifier) string {
		return filepath.Join(dataDir, "outputs", r.Project, r.Domain, r.Name)
	}
	for _, r := range []client.RunIdentifier{keep, gone} {
		if _, err := os.Stat(filepath.Join(dirOf(r), "a0", "stdout-1.log")); err != nil {
			t.Fatalf("the log of %s before the delete: %v", r.Name, err)
		}
	}

	waitRetired(t, dataDir, keep.Name)

	resp, err := c.DeleteRunWithResponse(context.Background(), gone.Project, gone.Domain, gone.Name, nil)
	if err != nil || resp.StatusCode() != http.StatusAccepted {
		t.Fatalf("delete the run: %v %v %s", err, resp.StatusCode(), resp.Body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(dirOf(gone)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted run's output dir is still there; log:\n%s", tail(p.log()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dirOf(keep), "a0", "stdout-1.log")); err != nil {
		t.Errorf("the kept run's log: %v", err)
	}
	logs, err := c.GetActionLogsWithResponse(context.Background(), keep.Project, keep.Domain, keep.Name, "a0", nil)
	if err != nil || logs.StatusCode() != http.StatusOK || strings.TrimSpace(string(logs.Body)) != "hello" {
		t.Errorf("the kept run's log: %v %v %q", err, logs.StatusCode(), logs.Body)
	}
	if !strings.Contains(p.log(), "removed the output dirs of deleted runs") {
		t.Errorf("no log line of the sweep; log:\n%s", tail(p.log()))
	}
}

// waitRetired waits until no TaskAction of the run is left in the control
// plane: retention has retired them, and only history holds the run.
func waitRetired(t *testing.T, dataDir, run string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := kube.FlyteV1().TaskActions(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
		if err == nil && !slices.ContainsFunc(list.Items, func(ta v1.TaskAction) bool { return ta.Spec.RunName == run }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not retired: %v", run, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
