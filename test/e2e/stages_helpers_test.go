package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

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
