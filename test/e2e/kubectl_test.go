package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"taskactions/pkg/client"
)

// kubectlBin is the genuine kubectl (make kubectl: built from the
// Kubernetes libraries in go.mod); TASKACTIONS_KUBECTL names another.
func kubectlBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TASKACTIONS_KUBECTL"); p != "" {
		return p
	}
	p, err := filepath.Abs("../../bin/kubectl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (make kubectl builds it; make test does)", p, err)
	}
	return p
}

// kubectl runs kubectl against the shared server's embedded control plane,
// with a HOME of its own (kubectl caches discovery there).
type kubectl struct {
	t          *testing.T
	bin, home  string
	kubeconfig string
}

func newKubectl(t *testing.T) *kubectl {
	return &kubectl{t: t, bin: kubectlBin(t), home: t.TempDir(), kubeconfig: filepath.Join(srv.dataDir, "kubeconfig")}
}

// run returns stdout, stderr and whether kubectl succeeded.
func (k *kubectl) run(stdin string, args ...string) (string, string, bool) {
	k.t.Helper()
	cmd := exec.Command(k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.home, "KUBECONFIG=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err == nil
}

func (k *kubectl) must(stdin string, args ...string) string {
	k.t.Helper()
	out, errs, ok := k.run(stdin, args...)
	if !ok {
		k.t.Fatalf("kubectl %s: %s%s", strings.Join(args, " "), errs, out)
	}
	return out
}

// kubectl against the embedded control plane, as docs/operations.md says: version,
// discovery, explain, apply with validation, get, a status patch, a
// missing object, delete. An object made by kubectl shows in REST and in
// all three streams; its status patched by kubectl shows in REST; its
// deletion takes it out of its run's summary at once.
func TestKubectl(t *testing.T) {
	k := newKubectl(t)
	if out := k.must("", "version"); !strings.Contains(out, "Server Version: v1.") || strings.Contains(out, "v0.0.0") {
		t.Errorf("kubectl version: %s", out)
	}
	if out := k.must("", "api-resources"); !strings.Contains(out, "taskactions") || !strings.Contains(out, "flyte.org/v1") {
		t.Errorf("kubectl api-resources: %s", out)
	}
	if out := k.must("", "explain", "taskaction.status"); !strings.Contains(out, "phaseHistory") || !strings.Contains(out, "conditions") {
		t.Errorf("kubectl explain taskaction.status: %s", out)
	}

	run := newRun()
	ns := run.Project + "-" + run.Domain
	runs := openStream(t, srv.http, fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/events", srv.URL(), run.Project, run.Domain), "")
	runs.untilSynced(t)
	actions := openStream(t, srv.http, runStreamURL(srv, run), "")
	actions.untilSynced(t)
	node := openStream(t, srv.http, actionStreamURL(srv, run, "k0"), "")
	node.untilSynced(t)

	manifest := fmt.Sprintf(`apiVersion: flyte.org/v1
kind: TaskAction
metadata:
  name: %s-k0
  namespace: %s
spec:
  runName: %s
  project: %s
  domain: %s
  actionName: k0
  taskType: external
`, run.Name, ns, run.Name, run.Project, run.Domain)
	k.must(manifest, "apply", "-f", "-") // validation on
	if _, errs, ok := k.run(strings.Replace(manifest, "taskType: external", "taskType: external\n  bogus: 1", 1), "apply", "-f", "-"); ok || !strings.Contains(errs, "bogus") {
		t.Errorf("apply of an unknown field was not refused by name: %s", errs)
	}
	eventually(t, 10*time.Second, "REST to show the kubectl object", func() bool {
		r, err := srv.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "k0")
		return err == nil && r.JSON200 != nil && r.JSON200.Phase == client.QUEUED
	})
	for name, s := range map[string]*sseStream{"run": actions, "action": node} {
		if ev := s.next(t, 10*time.Second); ev.Type != "action" || nameOf(t, ev) != "k0" {
			t.Errorf("%s stream: %s %s, want the kubectl object", name, ev.Type, ev.Data)
		}
	}
	if ev := runs.next(t, 10*time.Second); ev.Type != "run" || !strings.Contains(string(ev.Data), run.Name) {
		t.Errorf("runs stream: %s %s, want the kubectl object's run", ev.Type, ev.Data)
	}
	if out := k.must("", "get", "taskactions", "-A"); !strings.Contains(out, run.Name+"-k0") || !strings.Contains(out, "PHASE") || !strings.Contains(out, "QUEUED") {
		t.Errorf("kubectl get -A: %s", out)
	}
	if out := k.must("", "get", "taskaction", "-n", ns, run.Name+"-k0", "-o", "yaml"); !strings.Contains(out, "actionName: k0") {
		t.Errorf("kubectl get -o yaml: %s", out)
	}

	patch := `{"status":{"conditions":[{"type":"Progressing","status":"True","reason":"Executing","message":"by kubectl","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	k.must("", "patch", "taskaction", "-n", ns, run.Name+"-k0", "--subresource=status", "--type=merge", "-p", patch)
	eventually(t, 10*time.Second, "REST to show the patched status", func() bool {
		r, err := srv.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "k0")
		return err == nil && r.JSON200 != nil && r.JSON200.Phase == client.RUNNING
	})

	if _, errs, ok := k.run("", "get", "taskaction", "nope", "-n", ns); ok || !strings.Contains(errs, `"nope" not found`) {
		t.Errorf("kubectl get of a missing object: %s", errs)
	}

	// The object goes; history keeps the action, which never finished:
	// it reads ABORTED, and so does its run.
	k.must("", "delete", "taskaction", "-n", ns, run.Name+"-k0")
	eventually(t, 10*time.Second, "the run to end with its only action deleted", func() bool {
		r, err := srv.api.GetRunWithResponse(context.Background(), run.Project, run.Domain, run.Name)
		return err == nil && r.JSON200 != nil && r.JSON200.Phase == client.ABORTED && liveObjects(srv, run) == 0
	})
}

// Every TaskAction as Flyte writes it applies (client-side and server-side)
// and reads back unchanged; the API finds each by its id though Flyte names
// and places them its own way, describes Flyte's protobuf template without
// parsing it, and no executor here touches them.
func TestFlyteObjects(t *testing.T) {
	k := newKubectl(t)
	manifest, err := os.ReadFile("testdata/flyte-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k.must(string(manifest), "apply", "-f", "-")
	k.must(string(manifest), "apply", "--server-side", "-f", "-")
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		var want struct {
			Metadata struct{ Name, Namespace string }
			Spec     map[string]any
		}
		if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		var got struct{ Spec map[string]any }
		mustJSON(t, []byte(k.must("", "get", "taskaction", "-n", want.Metadata.Namespace, want.Metadata.Name, "-o", "json")), &got)
		wantJSON, _ := json.Marshal(want.Spec)
		gotJSON, _ := json.Marshal(got.Spec)
		if !bytes.Equal(wantJSON, gotJSON) {
			t.Errorf("%s read back as\n%s\nwant\n%s", want.Metadata.Name, gotJSON, wantJSON)
		}
	}

	ctx := context.Background()
	var root *client.Action
	eventually(t, 10*time.Second, "the Flyte root by its id", func() bool {
		r, err := srv.api.GetActionWithResponse(ctx, "test-project", "development", "frun1", "frun1")
		root = r.JSON200
		return err == nil && root != nil
	})
	// Flyte's template: a serialized core.TaskTemplate of 44 bytes.
	if root.TaskTemplate == nil || root.TaskTemplate.Encoding != "binary" || root.TaskTemplate.Size != 44 {
		t.Errorf("the root's template: %+v, want 44 bytes, binary", root.TaskTemplate)
	}
	kids, err := srv.api.ListChildActionsWithResponse(ctx, "test-project", "development", "frun1", "frun1", nil)
	if err != nil || kids.JSON200 == nil || len(kids.JSON200.Items) != 2 {
		t.Fatalf("children of the Flyte root: %v %s", err, kids.Body)
	}
	for _, a := range kids.JSON200.Items {
		if a.ActionId.Name == "c0" && a.ActionType != client.ActionActionTypeCondition {
			t.Errorf("c0 is a %s action, want a condition", a.ActionType)
		}
	}
	time.Sleep(time.Second) // the executor had its chance
	list, err := srv.api.ListRunActionsWithResponse(ctx, "test-project", "development", "frun1", nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Items) != 3 {
		t.Fatalf("the Flyte run: %v %s", err, list.Body)
	}
	for _, a := range list.JSON200.Items {
		if a.Phase != client.QUEUED || a.Attempts != 0 || len(a.PhaseHistory) != 0 {
			t.Errorf("%s was touched: %s, attempt %d, history %v", a.ActionId.Name, a.Phase, a.Attempts, a.PhaseHistory)
		}
	}
}
