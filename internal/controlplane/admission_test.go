package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/config/crd"
	"taskactions/internal/kargo/rules"
)

const stageNamespace = "kargo-demo"

// stages returns a dynamic client for Stages in stageNamespace (Start
// installed the Stage CRD beside TaskAction's).
func stages(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	dc, err := dynamic.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return dc.Resource(kargoapi.SchemeGroupVersion.WithResource(kargoapi.StagePlural)).Namespace(stageNamespace)
}

func decodeStage(t *testing.T, doc []byte) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetNamespace(stageNamespace)
	return u
}

const reservedAliasStage = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: reserved
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: kargo-demo}
    sources: {direct: true}
  promotionTemplate:
    spec:
      steps:
      - uses: git-clone
        as: step-1
`

func TestStageAdmissionRejectsReservedAlias(t *testing.T) {
	_, err := stages(t).Create(t.Context(), decodeStage(t, []byte(reservedAliasStage)), metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 || !apierrors.IsInvalid(err) {
		t.Fatalf("create with a reserved alias: got %v, want 422 Invalid", err)
	}
	const want = `spec.promotionTemplate.spec.steps[0].as: Invalid value: "step-1": step alias is reserved`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	d := se.ErrStatus.Details
	if d == nil || d.Group != "kargo.akuity.io" || d.Kind != "Stage" || d.Name != "reserved" ||
		len(d.Causes) != 1 || d.Causes[0].Field != "spec.promotionTemplate.spec.steps[0].as" {
		t.Errorf("details: %+v", d)
	}
}

const shardStage = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata:
  name: sharded
  labels:
    team: blue
spec:
  shard: east
  requestedFreight:
  - origin: {kind: Warehouse, name: kargo-demo}
    sources: {direct: true}
  promotionTemplate:
    spec:
      steps:
      - uses: git-clone
`

func TestStageAdmissionDefaultsShardLabel(t *testing.T) {
	ctx := t.Context()
	sc := stages(t)
	created, err := sc.Create(ctx, decodeStage(t, []byte(shardStage)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), "sharded", metav1.DeleteOptions{}) })
	if got := created.GetLabels(); got[kargoapi.LabelKeyShard] != "east" || got["team"] != "blue" {
		t.Fatalf("labels after create: %v", got)
	}

	// Clearing spec.shard removes the label, even when the update sets it.
	unstructured.RemoveNestedField(created.Object, "spec", "shard")
	created.SetLabels(map[string]string{"team": "blue", kargoapi.LabelKeyShard: "stale"})
	updated, err := sc.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := updated.GetLabels(); len(got) != 1 || got["team"] != "blue" {
		t.Errorf("labels after clearing spec.shard: %v", got)
	}

	// An update is validated too.
	steps, _, _ := unstructured.NestedSlice(updated.Object, "spec", "promotionTemplate", "spec", "steps")
	steps = append(steps, map[string]any{"uses": "git-commit", "as": "task-3"})
	if err := unstructured.SetNestedSlice(updated.Object, steps, "spec", "promotionTemplate", "spec", "steps"); err != nil {
		t.Fatal(err)
	}
	_, err = sc.Update(ctx, updated, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "steps[1].as: Invalid value: \"task-3\": step alias is reserved") {
		t.Errorf("update with a reserved alias: got %v, want Invalid", err)
	}

	// The status subresource is not admitted as a Stage write.
	if err := unstructured.SetNestedField(updated.Object, "0/1 Fulfilled", "status", "freightSummary"); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update status: %v", err)
	}
}

// fixture is one document of test/e2e/testdata/stages.
type fixture struct {
	file, expect, field string
	doc                 []byte
}

func readFixtures(t *testing.T) []fixture {
	t.Helper()
	dir := filepath.Join("..", "..", "test", "e2e", "testdata", "stages")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures in %s: %v", dir, err)
	}
	var out []fixture
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var expect, fieldPath string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "# expect: "); ok {
				expect = v
			}
			if v, ok := strings.CutPrefix(line, "# field: "); ok {
				fieldPath = v
			}
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			out = append(out, fixture{file: filepath.Base(f), expect: expect, field: fieldPath, doc: doc})
		}
	}
	return out
}

// TestStageFixturesAgreeWithAPIServer sends every fixture through the API
// server (CRD schema, CEL rules and the admission plugin) and through
// rules.ValidateStage: both must reject the invalid ones with the expected
// message on the expected field, and accept the valid ones.
func TestStageFixturesAgreeWithAPIServer(t *testing.T) {
	ctx := t.Context()
	sc := stages(t)
	for _, fx := range readFixtures(t) {
		t.Run(fx.file, func(t *testing.T) {
			u := decodeStage(t, fx.doc)
			var typed kargoapi.Stage
			if err := yaml.Unmarshal(fx.doc, &typed); err != nil {
				t.Fatalf("decode as Stage: %v", err)
			}
			errs := rules.ValidateStage(&typed)
			_, err := sc.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})

			if fx.expect == "" {
				if err != nil {
					t.Errorf("API server rejected a valid Stage: %v", err)
				}
				if len(errs) > 0 {
					t.Errorf("ValidateStage rejected a valid Stage: %v", errs.ToAggregate())
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("API server: got %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), fx.expect) {
				t.Errorf("API server error %q does not contain %q", err, fx.expect)
			}
			if !hasCause(err, fx.field) {
				t.Errorf("API server error has no cause on %s: %+v", fx.field, err.(*apierrors.StatusError).ErrStatus.Details)
			}
			var found bool
			for _, e := range errs {
				if e.Field != fx.field || !strings.Contains(e.Error(), fx.expect) {
					continue
				}
				found = true
				// The whole field error reads as the API server's, except a
				// duration's value: a typed Stage holds time.Duration, which
				// prints "-1h" as "-1h0m0s".
				if !strings.Contains(err.Error(), e.Error()) && !strings.Contains(fx.file, "soak-time") {
					t.Errorf("ValidateStage says %q, the API server %q", e.Error(), err)
				}
			}
			if !found {
				t.Errorf("ValidateStage: no error on %s containing %q in %v", fx.field, fx.expect, errs.ToAggregate())
			}
		})
	}
}

func hasCause(err error, fieldPath string) bool {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return false
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == fieldPath {
			return true
		}
	}
	return false
}

// kargoResource returns a dynamic client for a Kargo resource in
// stageNamespace, installing the Promotion and Freight CRDs first (Start
// may not yet; EnsureCRDs is idempotent).
func kargoResource(t *testing.T, plural string) dynamic.ResourceInterface {
	t.Helper()
	if _, err := EnsureCRDs(t.Context(), shared.RESTConfig(), CRD{YAML: crd.Promotions}, CRD{YAML: crd.Freights}); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return dc.Resource(kargoapi.SchemeGroupVersion.WithResource(plural)).Namespace(stageNamespace)
}

const promotionDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Promotion
metadata:
  name: test.01jxkq1b6m3x8v2e9k0c4r7t5y.abcdef0
spec:
  stage: test
  freight: abcdef0123
  vars:
  - name: a
    value: "1"
  steps:
  - uses: git-clone
    as: step-1
    config:
      repoURL: https://github.com/example/repo.git
`

func wantInvalid(t *testing.T, err error, kind, fieldPath string, contains ...string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not contain %q", err, c)
		}
	}
	if d := se.ErrStatus.Details; d == nil || d.Kind != kind || !hasCause(err, fieldPath) {
		t.Errorf("details: %+v", se.ErrStatus.Details)
	}
}

func TestPromotionAdmissionSpecImmutable(t *testing.T) {
	ctx := t.Context()
	pc := kargoResource(t, kargoapi.PromotionPlural)
	created, err := pc.Create(ctx, decodeStage(t, []byte(promotionDoc)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = pc.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })

	// Metadata may change.
	created.SetAnnotations(map[string]string{kargoapi.AnnotationKeyAbort: `{"action":"terminate"}`})
	updated, err := pc.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update annotations: %v", err)
	}

	// The spec may not.
	for _, mutate := range []func(u *unstructured.Unstructured){
		func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "fedcba9", "spec", "freight")
		},
		func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "vars") },
		func(u *unstructured.Unstructured) {
			steps, _, _ := unstructured.NestedSlice(u.Object, "spec", "steps")
			steps[0].(map[string]any)["config"] = map[string]any{"repoURL": "https://github.com/example/other.git"}
			_ = unstructured.SetNestedSlice(u.Object, steps, "spec", "steps")
		},
	} {
		u := updated.DeepCopy()
		mutate(u)
		_, err = pc.Update(ctx, u, metav1.UpdateOptions{})
		wantInvalid(t, err, "Promotion", "spec", `spec: Invalid value: `, ": spec is immutable")
	}

	// Status updates are not the spec's.
	if err := unstructured.SetNestedField(updated.Object, string(kargoapi.PromotionPhaseRunning), "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update status: %v", err)
	}
}

func TestPromotionSchemaRejectsTaskSteps(t *testing.T) {
	u := decodeStage(t, []byte(promotionDoc))
	steps := []any{map[string]any{"task": map[string]any{"name": "deploy"}}}
	if err := unstructured.SetNestedSlice(u.Object, steps, "spec", "steps"); err != nil {
		t.Fatal(err)
	}
	_, err := kargoResource(t, kargoapi.PromotionPlural).Create(t.Context(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	wantInvalid(t, err, "Promotion", "spec.steps[0]", "Promotion step must have uses set and must not reference a task")
}

const freightDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Freight
metadata:
  name: chosen-by-user
  labels:
    team: blue
alias: frosty-fox
origin:
  kind: Warehouse
  name: kargo-demo
images:
- repoURL: nginx
  tag: 1.27.0
  digest: sha256:abc
commits:
- repoURL: https://github.com/example/repo.git
  id: 0123456789abcdef
`

func TestFreightAdmission(t *testing.T) {
	ctx := t.Context()
	fc := kargoResource(t, kargoapi.FreightPlural)
	in := decodeStage(t, []byte(freightDoc))
	var typed kargoapi.Freight
	if err := yaml.Unmarshal([]byte(freightDoc), &typed); err != nil {
		t.Fatal(err)
	}
	id := rules.GenerateFreightID(&typed)

	created, err := fc.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = fc.Delete(context.Background(), id, metav1.DeleteOptions{}) })
	if created.GetName() != id {
		t.Errorf("name %q, want the Freight ID %q", created.GetName(), id)
	}
	if l := created.GetLabels(); l[kargoapi.LabelKeyAlias] != "frosty-fox" || l["team"] != "blue" {
		t.Errorf("labels %v", l)
	}

	// The alias label follows the field on update; removing the alias
	// removes the label.
	created.Object["alias"] = "calm-cat"
	updated, err := fc.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update alias: %v", err)
	}
	if l := updated.GetLabels(); l[kargoapi.LabelKeyAlias] != "calm-cat" {
		t.Errorf("labels after alias change %v", l)
	}
	delete(updated.Object, "alias")
	updated, err = fc.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update without alias: %v", err)
	}
	if _, ok := updated.GetLabels()[kargoapi.LabelKeyAlias]; ok {
		t.Errorf("alias label kept: %v", updated.GetLabels())
	}

	// Origin and artifacts are immutable.
	u := updated.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, "other", "origin", "name")
	_, err = fc.Update(ctx, u, metav1.UpdateOptions{})
	wantInvalid(t, err, "Freight", "origin", "Freight is immutable")
	u = updated.DeepCopy()
	images, _, _ := unstructured.NestedSlice(u.Object, "images")
	images[0].(map[string]any)["tag"] = "1.28.0"
	_ = unstructured.SetNestedSlice(u.Object, images, "images")
	_, err = fc.Update(ctx, u, metav1.UpdateOptions{})
	wantInvalid(t, err, "Freight", "images[0]", "Freight is immutable")

	// Status is written through the subresource.
	_ = unstructured.SetNestedField(updated.Object, map[string]any{"test": map[string]any{"verifiedAt": "2025-06-01T12:00:00Z"}}, "status", "verifiedIn")
	if _, err := fc.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update status: %v", err)
	}
}

func TestFreightAdmissionRejects(t *testing.T) {
	fc := kargoResource(t, kargoapi.FreightPlural)
	cases := []struct {
		name, field, want string
		mutate            func(u *unstructured.Unstructured)
		alsoWant          string
	}{
		// Kargo's error is on the empty path (which prints "[]") with the
		// whole Freight as the value.
		{"no artifacts", "[]", "[]: Invalid value: {\"kind\":\"Freight\"", func(u *unstructured.Unstructured) {
			delete(u.Object, "images")
			delete(u.Object, "commits")
		}, ": freight must contain at least one commit, image, or chart"},
		{"empty origin name", "origin.name", "origin.name: Required value", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "", "origin", "name")
		}, ""},
		{"unknown origin kind (schema)", "origin.kind", `origin.kind: Unsupported value: "Bucket"`, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Bucket", "origin", "kind")
		}, ""},
		{"no origin (schema)", "origin", "origin: Required value", func(u *unstructured.Unstructured) {
			delete(u.Object, "origin")
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := decodeStage(t, []byte(freightDoc))
			tc.mutate(u)
			_, err := fc.Create(t.Context(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			wantInvalid(t, err, "Freight", tc.field, tc.want, tc.alsoWant)
		})
	}
}
