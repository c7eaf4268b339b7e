package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Stages written with the genuine kubectl on the embedded control plane:
// the CRD's schema and CEL rules (the API server's), Kargo's webhook rules
// and shard defaulting (the in-process admission plugin), the printer
// columns, and what REST and the streams show of kubectl's writes.

// Every invalid fixture is refused by kubectl apply with Kargo's message
// at the fixture's field, and none is created.
func TestStageKubectlInvalidFixtures(t *testing.T) {
	k := newKubectl(t)
	ns := stageProject()
	for _, fx := range stageFixtures(t, "invalid-") {
		t.Run(fx.file, func(t *testing.T) {
			out, errs, ok := k.run("", "apply", "-f", fx.path, "-n", ns)
			if ok {
				t.Fatalf("kubectl apply succeeded: %s", out)
			}
			if !strings.Contains(errs, fx.expect) {
				t.Errorf("stderr does not say %q:\n%s", fx.expect, errs)
			}
			if !strings.Contains(errs, fx.field+":") {
				t.Errorf("stderr does not name the field %s:\n%s", fx.field, errs)
			}
		})
	}
	if out := k.must("", "get", "stages", "-n", ns, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("refused Stages exist:\n%s", out)
	}
}

// kubectl apply of Kargo's docs' Stages: the printer columns with the
// controller's status, the shard label defaulted on create and update, and
// the Stages in REST and in an open stream; then kubectl delete.
//
// It reads better whole: its cases are one table, a line each.
func TestStageKubectl(t *testing.T) {
	k := newKubectl(t)
	ns := stageProject()
	if out := k.must("", "api-resources", "--api-group=kargo.akuity.io"); !strings.Contains(out, "stages") || !strings.Contains(out, "kargo.akuity.io/v1alpha1") {
		t.Errorf("kubectl api-resources: %s", out)
	}
	s := openStream(t, srv.http, projectStagesStreamURL(ns), "")
	if names, _ := s.snapshot(t, false); len(names) != 0 {
		t.Fatalf("snapshot of a new project: %v", names)
	}

	docs, _ := filepath.Abs("testdata/stages/valid-kargo-docs.yaml")
	out := k.must("", "apply", "-f", docs, "-n", ns)
	if !strings.Contains(out, "stage.kargo.akuity.io/test created") || !strings.Contains(out, "stage.kargo.akuity.io/uat created") {
		t.Errorf("kubectl apply: %s", out)
	}

	// REST and the stream see them.
	eventually(t, 10*time.Second, "REST to list the kubectl Stages", func() bool {
		return slices.Equal(listStageNames(t, ns), []string{"test", "uat"})
	})
	seen := map[string]bool{}
	s.untilStage(t, "test and uat", nil, func(e stageEvent) bool {
		seen[e.Name] = true
		return seen["test"] && seen["uat"]
	})

	// kubectl get: the printer columns, and the controller's status in them.
	var table string
	eventually(t, 10*time.Second, "kubectl get stages to show the controller's status", func() bool {
		table = k.must("", "get", "stages", "-n", ns)
		return strings.Count(table, "Stage has no current Freight") == 2
	})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"NAME", "SHARD", "CURRENT", "FREIGHT", "HEALTH", "READY", "STATUS", "AGE"}) {
		t.Errorf("kubectl get stages header %q", lines[0])
	}
	for _, row := range []struct{ name, shard string }{{"test", "blue"}, {"uat", ""}} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, row.name+" ") })
		if i < 0 {
			t.Errorf("no row for %s:\n%s", row.name, table)
			continue
		}
		l := lines[i]
		if (row.shard != "" && !strings.Contains(l, " "+row.shard+" ")) || !strings.Contains(l, "0/1 Fulfilled") ||
			!strings.Contains(l, " False ") || !strings.Contains(l, "Stage has no current Freight") {
			t.Errorf("row of %s: %q", row.name, l)
		}
	}
	test := getStage(t, ns, "test")
	for _, c := range []struct{ typ, status, reason string }{
		{kargoapi.ConditionTypeReady, "False", "NoFreight"},
		{kargoapi.ConditionTypeHealthy, "Unknown", "NoFreight"},
		{kargoapi.ConditionTypeVerified, "Unknown", "NoFreight"},
	} {
		if got := condition(test, c.typ); got == nil || got.Status != c.status || got.Reason != c.reason {
			t.Errorf("test's %s condition %+v, want %s/%s", c.typ, got, c.status, c.reason)
		}
	}
	if test.Status.FreightSummary != "0/1 Fulfilled" {
		t.Errorf("test's freightSummary %q", test.Status.FreightSummary)
	}

	// The shard label: defaulted from spec.shard, overriding a label that
	// disagrees, removed without spec.shard, and following an update.
	shardLabel := func(name string) (string, bool) {
		var st kargoapi.Stage
		mustJSON(t, []byte(k.must("", "get", "stage", name, "-n", ns, "-o", "json")), &st)
		v, ok := st.Labels[kargoapi.LabelKeyShard]
		return v, ok
	}
	if v, _ := shardLabel("test"); v != "blue" {
		t.Errorf("test's shard label %q, want blue", v)
	}
	if v, ok := shardLabel("uat"); ok {
		t.Errorf("uat (no spec.shard) has the shard label %q", v)
	}
	flow := func(name, shard, label string) string {
		m := fmt.Sprintf("apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\n", name)
		if label != "" {
			m += fmt.Sprintf("  labels:\n    kargo.akuity.io/shard: %s\n", label)
		}
		m += "spec:\n"
		if shard != "" {
			m += "  shard: " + shard + "\n"
		}
		return m + "  requestedFreight:\n  - origin: {kind: Warehouse, name: kargo-demo}\n    sources: {stages: [test]}\n"
	}
	k.must(flow("red", "red", "blue")+"---\n"+flow("none", "", "blue"), "apply", "-n", ns, "-f", "-")
	if v, _ := shardLabel("red"); v != "red" {
		t.Errorf("a Stage with spec.shard red and the label blue has the label %q", v)
	}
	if v, ok := shardLabel("none"); ok {
		t.Errorf("a Stage without spec.shard keeps the shard label %q", v)
	}
	k.must("", "patch", "stage", "test", "-n", ns, "--type=merge", "-p", `{"spec":{"shard":"green"}}`)
	if v, _ := shardLabel("test"); v != "green" {
		t.Errorf("after kubectl patch of spec.shard to green, the label is %q", v)
	}
	// Control-flow Stages (no steps) become Ready.
	eventually(t, 10*time.Second, "the control-flow Stages Ready in kubectl get", func() bool {
		out := k.must("", "get", "stages", "red", "none", "-n", ns, "--no-headers")
		return strings.Count(out, " True ") == 2 && strings.Count(out, "N/A") == 2
	})

	k.must("", "delete", "stage", "uat", "-n", ns)
	s.untilStage(t, "uat deleted", nil, func(e stageEvent) bool { return e.Name == "uat" && e.Deleted })
	eventually(t, 10*time.Second, "REST to forget uat", func() bool {
		return stageGet(t, ns, "uat").code == http.StatusNotFound
	})
}
