package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// The Stage API (kargo.akuity.io/v1alpha1) over real HTTP: these helpers
// and the REST tests; stages_kubectl_test.go and stages_stream_test.go
// have the rest.

// Create (JSON and YAML), get, list, replace (optimistic), delete, and the
// errors of each, as a client of the REST API sees them.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStageREST(t *testing.T) {
	p := stageProject()

	// Create from JSON: the object as Kubernetes has it, in the project's
	// namespace, the shard label following spec.shard.
	b := createStage(t, p, regularStage("b", "blue"))
	if b.APIVersion != "kargo.akuity.io/v1alpha1" || b.Kind != "Stage" || b.Name != "b" || b.Namespace != p {
		t.Errorf("created %s %s %s/%s, want kargo.akuity.io/v1alpha1 Stage %s/b", b.APIVersion, b.Kind, b.Namespace, b.Name, p)
	}
	if b.UID == "" || b.ResourceVersion == "" || b.Generation != 1 || b.CreationTimestamp.IsZero() {
		t.Errorf("created metadata %+v", b.ObjectMeta)
	}
	if b.Labels[kargoapi.LabelKeyShard] != "blue" {
		t.Errorf("labels %v, want the shard label blue (from spec.shard)", b.Labels)
	}

	// Create from YAML, as Kargo's docs write Stages: the spec comes back as
	// written.
	for _, doc := range yamlDocs(t, "testdata/stages/valid-kargo-docs.yaml") {
		r := stageCreate(t, p, "application/yaml", doc)
		got := r.stage(t, http.StatusCreated)
		var want, gotRaw struct {
			Metadata struct{ Name string }
			Spec     map[string]any
		}
		if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		mustJSON(t, r.body, &gotRaw)
		canonicalDurations(want.Spec)
		if !reflect.DeepEqual(want.Spec, gotRaw.Spec) {
			wj, _ := json.Marshal(want.Spec)
			t.Errorf("%s: spec came back as\n%s\nwant\n%s", want.Metadata.Name, r.body, wj)
		}
		if got.Name != want.Metadata.Name || got.Namespace != p {
			t.Errorf("YAML create made %s/%s", got.Namespace, got.Name)
		}
		if wantShard := got.Spec.Shard; got.Labels[kargoapi.LabelKeyShard] != wantShard {
			t.Errorf("%s: shard label %q, want %q", got.Name, got.Labels[kargoapi.LabelKeyShard], wantShard)
		}
	}
	test := getStage(t, p, "test")
	if test.Spec.Shard != "blue" || len(test.Spec.PromotionTemplate.Spec.Steps) != 7 || test.Spec.PromotionTemplate.Spec.Steps[2].As != "update-image" {
		t.Errorf("get test: %+v", test.Spec)
	}
	if uat := getStage(t, p, "uat"); uat.Spec.RequestedFreight[0].Sources.AvailabilityStrategy != kargoapi.FreightAvailabilityStrategyOneOf ||
		uat.Spec.RequestedFreight[0].Sources.RequiredSoakTime.Duration != time.Hour || len(uat.Spec.Verification.Args) != 1 {
		t.Errorf("get uat: %+v", uat.Spec)
	}
	createStage(t, p, controlFlowStage("a"))
	if got := listStageNames(t, p); !slices.Equal(got, []string{"a", "b", "test", "uat"}) {
		t.Errorf("list: %v, want a b test uat (sorted by name)", got)
	}

	// The name is taken.
	if prob := stageCreate(t, p, "application/json", regularStage("b", "")).problem(t, http.StatusConflict); !strings.Contains(prob.Detail, `"b" already exists`) {
		t.Errorf("409 detail %q", prob.Detail)
	}

	// Replace from the current version: the spec changes, the shard label
	// follows, the generation goes up.
	cur := settled(t, p, "b") // the controller's status write would make cur stale
	next := cur.DeepCopy()
	next.Spec.Shard = "green"
	next.Spec.PromotionTemplate.Spec.Steps = append(next.Spec.PromotionTemplate.Spec.Steps, kargoapi.PromotionStep{Uses: "git-push", As: "push"})
	body, _ := json.Marshal(next)
	replaced := stageReplace(t, p, "b", string(body)).stage(t, http.StatusOK)
	if replaced.Spec.Shard != "green" || replaced.Labels[kargoapi.LabelKeyShard] != "green" || len(replaced.Spec.PromotionTemplate.Spec.Steps) != 2 {
		t.Errorf("replaced: shard %q, labels %v, steps %d", replaced.Spec.Shard, replaced.Labels, len(replaced.Spec.PromotionTemplate.Spec.Steps))
	}
	if replaced.Generation != cur.Generation+1 || replaced.ResourceVersion == cur.ResourceVersion || replaced.UID != cur.UID {
		t.Errorf("replaced: generation %d -> %d, resourceVersion %s -> %s", cur.Generation, replaced.Generation, cur.ResourceVersion, replaced.ResourceVersion)
	}
	if got := getStage(t, p, "b"); got.Spec.Shard != "green" || got.Generation != replaced.Generation {
		t.Errorf("get after replace: shard %q generation %d", got.Spec.Shard, got.Generation)
	}
	// The same change again, from the version it was made from: stale.
	if prob := stageReplace(t, p, "b", string(body)).problem(t, http.StatusConflict); !strings.Contains(prob.Detail, "changed since") {
		t.Errorf("stale replace: 409 detail %q", prob.Detail)
	}
	// No version at all.
	next.ResourceVersion = ""
	body, _ = json.Marshal(next)
	if prob := stageReplace(t, p, "b", string(body)).problem(t, http.StatusBadRequest); !hasFieldError(prob, "/metadata/resourceVersion", "Required value") {
		t.Errorf("replace without resourceVersion: %+v", prob)
	}
	// Another Stage's name in the body.
	other := getStage(t, p, "b")
	other.Name = "c"
	body, _ = json.Marshal(other)
	if prob := stageReplace(t, p, "b", string(body)).problem(t, http.StatusBadRequest); !hasFieldError(prob, "/metadata/name", `"c"`) {
		t.Errorf("replace under another name: %+v", prob)
	}
	// Another project's namespace in the body.
	inOther := strings.Replace(regularStage("c", ""), `"name":"c"`, `"name":"c","namespace":"elsewhere"`, 1)
	if prob := stageCreate(t, p, "application/json", inOther).problem(t, http.StatusBadRequest); !hasFieldError(prob, "/metadata/namespace", `"elsewhere"`) {
		t.Errorf("create in another namespace: %+v", prob)
	}
	if r := stageGet(t, "elsewhere", "c"); r.code != http.StatusNotFound {
		t.Errorf("the refused Stage exists in elsewhere: HTTP %d", r.code)
	}
	// Neither JSON nor YAML.
	if r := stageCreate(t, p, "text/plain", regularStage("c", "")); r.code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: HTTP %d, want 415", r.code)
	}

	// Delete, then it is gone, at once for the client that deleted it (as
	// after its create and replace).
	if r := stageDelete(t, p, "b"); r.code != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("delete: HTTP %d %s", r.code, r.body)
	}
	if r := stageGet(t, p, "b"); r.code != http.StatusNotFound {
		t.Errorf("GET right after DELETE: HTTP %d, want 404: %.200s", r.code, r.body)
	}
	if got := listStageNames(t, p); !slices.Equal(got, []string{"a", "test", "uat"}) {
		t.Errorf("list right after DELETE: %v, want a test uat", got)
	}
	eventually(t, 10*time.Second, "b to be gone", func() bool {
		return stageGet(t, p, "b").code == http.StatusNotFound
	})
	if prob := stageGet(t, p, "b").problem(t, http.StatusNotFound); !strings.Contains(prob.Detail, fmt.Sprintf(`Stage "b" not found in project %q`, p)) {
		t.Errorf("get after delete: %q", prob.Detail)
	}
	if r := stageDelete(t, p, "b"); r.code != http.StatusNotFound {
		t.Errorf("delete again: HTTP %d, want 404", r.code)
	}
	if got := listStageNames(t, p); !slices.Equal(got, []string{"a", "test", "uat"}) {
		t.Errorf("list after delete: %v, want a test uat", got)
	}

	// A project without Stages: an empty list, and Kargo's words for a
	// Stage not in it.
	empty := stageProject()
	if r := stageList(t, empty); r.code != http.StatusOK || !bytes.Equal(bytes.TrimSpace(r.body), []byte(`{"items":[]}`)) {
		t.Errorf("list of a project without Stages: HTTP %d %s", r.code, r.body)
	}
	want := fmt.Sprintf(`Stage "x" not found in project %q`, empty)
	if prob := stageGet(t, empty, "x").problem(t, http.StatusNotFound); !strings.Contains(prob.Detail, want) {
		t.Errorf("get of a missing Stage: %q, want %q", prob.Detail, want)
	}
}

// Every invalid fixture, posted as YAML and as JSON: 400 with the error
// at the fixture's field and Kargo's message, and nothing created.
func TestStageInvalidFixturesREST(t *testing.T) {
	p := stageProject()
	for _, fx := range stageFixtures(t, "invalid-") {
		asJSON, err := yaml.YAMLToJSON(fx.doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []struct{ ctype, data string }{{"application/yaml", string(fx.doc)}, {"application/json", string(asJSON)}} {
			t.Run(fx.file+"/"+strings.TrimPrefix(body.ctype, "application/"), func(t *testing.T) {
				r := stageCreate(t, p, body.ctype, body.data)
				if r.code != http.StatusBadRequest {
					t.Fatalf("HTTP %d, want 400: %s", r.code, r.body)
				}
				prob := r.problem(t, http.StatusBadRequest)
				if ptr := fieldPointer(fx.field); !hasFieldError(prob, ptr, fx.expect) {
					t.Errorf("no error at %s with %q: %s", ptr, fx.expect, r.body)
				}
			})
		}
		if r := stageGet(t, p, fx.name); r.code != http.StatusNotFound {
			t.Errorf("%s: the refused Stage exists (HTTP %d)", fx.file, r.code)
		}
	}
}

// A YAML body is one Stage, read as kubectl reads YAML: a stream of
// several documents (as kubectl applies a file) is refused, as JSON with
// data after its value is, not cut to its first document; and a name YAML
// 1.1 reads as a boolean (name: on) is refused, as kubectl refuses it, or
// kept as written, never turned into "true".
func TestStageYAMLBody(t *testing.T) {
	p := stageProject()
	b, err := os.ReadFile("testdata/stages/valid-kargo-docs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := stageCreate(t, p, "application/yaml", string(b))
	if r.code != http.StatusBadRequest {
		t.Errorf("POST of two YAML documents: HTTP %d, want 400; the project now has %v", r.code, listStageNames(t, p))
	}

	on := "apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: on\nspec:\n" +
		"  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n"
	r = stageCreate(t, p, "application/yaml", on)
	if r.code == http.StatusCreated {
		if s := r.stage(t, http.StatusCreated); s.Name != "on" {
			t.Errorf("POST of a Stage named on (YAML): created a Stage named %q", s.Name)
		}
	} else if r.code != http.StatusBadRequest {
		t.Errorf("POST of a Stage named on (YAML): HTTP %d, want 400 or 201: %s", r.code, r.body)
	}
}
