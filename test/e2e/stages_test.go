package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// The Stage API (kargo.akuity.io/v1alpha1) over real HTTP: these helpers
// and the REST tests; stages_kubectl_test.go and stages_stream_test.go
// have the rest.

// stageProject names a project (a namespace) no other test uses.
func stageProject() string { return fmt.Sprintf("stages%d", seq.Add(1)) }

// stagesURL is the URL of a project's Stages, or of what follows them.
func stagesURL(project string, elems ...string) string {
	u := fmt.Sprintf("%s/api/v1/projects/%s/stages", srv.URL(), project)
	for _, e := range elems {
		u += "/" + e
	}
	return u
}

// stageReply is an answer of the Stage API.
type stageReply struct {
	code   int
	header http.Header
	body   []byte
}

// The Stage operations through the generated client with the admin
// token, each answer kept whole for the checks below.

// stageCtx bounds one call (a refresh with wait=true takes up to 30 s).
func stageCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 45*time.Second)
}

// generated is what every response of the generated client has.
type generated interface {
	StatusCode() int
	ContentType() string
	GetBody() []byte
}

// replyOf is a generated client's answer as a stageReply.
func replyOf(r generated) stageReply {
	return stageReply{code: r.StatusCode(), header: http.Header{"Content-Type": {r.ContentType()}}, body: r.GetBody()}
}

func stageCreate(t testing.TB, project, contentType, body string) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.CreateStageWithBodyWithResponse(ctx, project, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

func stageGet(t testing.TB, project, name string) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.GetStageWithResponse(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

func stageList(t testing.TB, project string) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.ListStagesWithResponse(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

func stageReplace(t testing.TB, project, name, body string) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.ReplaceStageWithBodyWithResponse(ctx, project, name, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

func stageDelete(t testing.TB, project, name string) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.DeleteStageWithResponse(ctx, project, name)
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

func stageRefresh(t testing.TB, project, name string, wait bool) stageReply {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.RefreshStageWithResponse(ctx, project, name, &client.RefreshStageParams{Wait: &wait})
	if err != nil {
		t.Fatal(err)
	}
	return replyOf(r)
}

// stage decodes a Stage, after checking the status.
func (r stageReply) stage(t testing.TB, want int) kargoapi.Stage {
	t.Helper()
	if r.code != want {
		t.Fatalf("HTTP %d, want %d: %s", r.code, want, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var s kargoapi.Stage
	mustJSON(t, r.body, &s)
	return s
}

// problem decodes a problem document, after checking the status.
func (r stageReply) problem(t testing.TB, want int) problemDoc {
	t.Helper()
	if r.code != want {
		t.Fatalf("HTTP %d, want %d: %s", r.code, want, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemDoc
	mustJSON(t, r.body, &p)
	if p.Status != want || p.Title == "" {
		t.Errorf("not a problem document for %d: %s", want, r.body)
	}
	return p
}

// hasFieldError reports whether a problem has an error at pointer whose
// detail contains detail.
func hasFieldError(p problemDoc, pointer, detail string) bool {
	for _, e := range p.Errors {
		if e.Pointer == pointer && strings.Contains(e.Detail, detail) {
			return true
		}
	}
	return false
}

// regularStage is a Stage with one promotion step, in JSON.
func regularStage(name, shard string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"shard":%q,`+
		`"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w"},"sources":{"direct":true}}],`+
		`"promotionTemplate":{"spec":{"steps":[{"uses":"git-clone","as":"clone","config":{"path":"./out"}}]}}}}`, name, shard)
}

// controlFlowStage is a Stage without promotion steps, in JSON.
func controlFlowStage(name string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{`+
		`"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w"},"sources":{"direct":true}}]}}`, name)
}

func createStage(t testing.TB, project, body string) kargoapi.Stage {
	t.Helper()
	return stageCreate(t, project, "application/json", body).stage(t, http.StatusCreated)
}

func getStage(t testing.TB, project, name string) kargoapi.Stage {
	t.Helper()
	return stageGet(t, project, name).stage(t, http.StatusOK)
}

func listStageNames(t testing.TB, project string) []string {
	t.Helper()
	r := stageList(t, project)
	if r.code != http.StatusOK {
		t.Fatalf("list: HTTP %d %s", r.code, r.body)
	}
	var l struct{ Items []kargoapi.Stage }
	mustJSON(t, r.body, &l)
	names := []string{}
	for _, s := range l.Items {
		names = append(names, s.Name)
	}
	return names
}

// condition is a Stage's condition of a type (nil: none).
func condition(s kargoapi.Stage, typ string) *struct{ Status, Reason, Message string } {
	for _, c := range s.Status.Conditions {
		if c.Type == typ {
			return &struct{ Status, Reason, Message string }{string(c.Status), c.Reason, c.Message}
		}
	}
	return nil
}

// settled waits until the Stage controller has given a Stage its status
// for the Stage's current generation, and returns the Stage.
func settled(t testing.TB, project, name string) kargoapi.Stage {
	t.Helper()
	var s kargoapi.Stage
	eventually(t, 10*time.Second, "the controller's status of "+name, func() bool {
		s = getStage(t, project, name)
		for _, c := range s.Status.Conditions {
			if c.Type == kargoapi.ConditionTypeReady {
				return c.ObservedGeneration == s.Generation || (s.IsControlFlow() && s.Status.ObservedGeneration == s.Generation)
			}
		}
		return false
	})
	return s
}

// stageFixture is one file of testdata/stages.
type stageFixture struct {
	file          string // base name
	path          string // absolute
	doc           []byte
	name          string // metadata.name
	expect, field string // from the leading comments
}

// stageFixtures reads the fixtures whose names start with prefix.
func stageFixtures(t testing.TB, prefix string) []stageFixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "stages", prefix+"*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures %s*: %v", prefix, err)
	}
	var out []stageFixture
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(f)
		fx := stageFixture{file: filepath.Base(f), path: abs, doc: doc}
		for _, line := range strings.Split(string(doc), "\n") {
			if v, ok := strings.CutPrefix(line, "# expect: "); ok {
				fx.expect = v
			}
			if v, ok := strings.CutPrefix(line, "# field: "); ok {
				fx.field = v
			}
		}
		var meta struct{ Metadata struct{ Name string } }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fx.name = meta.Metadata.Name
		if strings.HasPrefix(fx.file, "invalid-") && (fx.expect == "" || fx.field == "" || fx.name == "") {
			t.Fatalf("%s: no # expect:, # field: or name", f)
		}
		out = append(out, fx)
	}
	return out
}

// yamlDocs splits a YAML stream into its documents.
func yamlDocs(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, d := range strings.Split(string(b), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

// fieldPointer turns a Kubernetes field path (spec.steps[0].as) into a
// JSON pointer (/spec/steps/0/as).
func fieldPointer(path string) string {
	path = strings.ReplaceAll(strings.ReplaceAll(path, "[", "."), "]", "")
	return "/" + strings.ReplaceAll(path, ".", "/")
}

// canonicalDurations rewrites the duration fields of a decoded spec as Go
// prints them: a typed Stage holds a metav1.Duration, so "1h" comes back
// as "1h0m0s" (as it does from Kargo's own API server, which is typed too).
func canonicalDurations(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "requiredSoakTime" || k == "timeout") {
				if d, err := time.ParseDuration(s); err == nil {
					x[k] = d.String()
				}
				continue
			}
			canonicalDurations(e)
		}
	case []any:
		for _, e := range x {
			canonicalDurations(e)
		}
	}
}

// Create (JSON and YAML), get, list, replace (optimistic), delete, and the
// errors of each, as a client of the REST API sees them.
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
