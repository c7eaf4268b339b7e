package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// Kargo's rules between steps, and the errors of the Freight and Promotion
// API.

// hit is a request the recorder received.
type hit struct {
	Method, Path, Body string
	Header             http.Header
}

// recorder is the http steps' target, on 127.0.0.1: it records every
// request, and answers by path:
//
//	/token         200 {"token":"tok-<X-Stage header>"}
//	/fail...       500 (the step fails for good)
//	/broken...     a JSON Content-Type with a body that is not JSON (an
//	               error Kargo retries)
//	/flaky...      as /broken twice, then as the default
//	anything else  200 {"ok":true}
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newRecorder(t testing.TB) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := readAll(t, req.Body)
		r.mu.Lock()
		r.hits = append(r.hits, hit{req.Method, req.URL.Path, body, req.Header.Clone()})
		n := 0
		for _, h := range r.hits {
			if h.Path == req.URL.Path {
				n++
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch p := req.URL.Path; {
		case p == "/token":
			fmt.Fprintf(w, `{"token":"tok-%s"}`, req.Header.Get("X-Stage"))
		case strings.HasPrefix(p, "/fail"):
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasPrefix(p, "/broken"), strings.HasPrefix(p, "/flaky") && n <= 2:
			fmt.Fprint(w, "not json")
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// to returns the requests to a path.
func (r *recorder) to(path string) []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hit
	for _, h := range r.hits {
		if h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// count is how many requests went to a path.
func (r *recorder) count(path string) int { return len(r.to(path)) }

// withIf gives a step an `if`.
func withIf(s kargoapi.PromotionStep, cond string) kargoapi.PromotionStep {
	s.If = cond
	return s
}

// Kargo's rules, one Stage each, all promoted at once: continueOnError,
// the implicit skip after a failure, failure()/success()/always()/status()
// conditions, errorThreshold as the action's retries, retry.timeout as its
// timeout, a `uses` nothing runs, an `if` that is not a boolean, and the
// Promotion's phase from its worst step.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestPromotionStepRules(t *testing.T) {
	s := promoServer(t)
	rec := newRecorder(t)
	k := newKProject(t, s)
	get := func(path string) map[string]any { return map[string]any{"url": rec.URL + path} }

	soft := pstep("http", "fail-soft", get("/fail/soft"))
	soft.ContinueOnError = true
	afterSoft := pstep("http", "after-soft", get("/ok/${{ vars.q }}"))
	afterSoft.Vars = []kargoapi.ExpressionVariable{{Name: "q", Value: "${{ ctx.stage }}-${{ vars.p }}"}}
	k.createStage("soft", direct(), []kargoapi.ExpressionVariable{{Name: "p", Value: "promo"}},
		soft,
		afterSoft,
		withIf(pstep("http", "on-failure", get("/never/soft")), "${{ failure() }}"))
	k.createStage("flow", direct(), nil,
		pstep("http", "fail-hard", get("/fail/flow")),
		pstep("http", "skipped", get("/never/flow")),
		withIf(pstep("http", "cleanup", get("/cleanup/flow")), "${{ failure() }}"),
		withIf(pstep("http", "on-success", get("/never/flow")), "${{ success() }}"),
		withIf(pstep("http", "always", get("/always/flow")), "${{ always() }}"),
		withIf(pstep("http", "status", get("/status/flow")), "${{ status('fail-hard') == 'Failed' }}"))
	flaky := pstep("http", "flaky", get("/flaky/retry"))
	flaky.Retry = &kargoapi.PromotionStepRetry{ErrorThreshold: 3}
	broken := pstep("http", "broken", get("/broken/retry"))
	broken.Retry = &kargoapi.PromotionStepRetry{ErrorThreshold: 2}
	k.createStage("retry", direct(), nil, flaky, broken)
	nap := pstep("sleep", "nap", map[string]any{"duration": "1m"})
	nap.Retry = &kargoapi.PromotionStepRetry{Timeout: &metav1.Duration{Duration: time.Second}}
	k.createStage("timeout", direct(), nil, nap, withIf(pstep("echo", "after", nil), "${{ always() }}"))
	k.createStage("severity", direct(), nil,
		pstep("http", "fail", get("/fail/severity")),
		withIf(pstep("nope", "nope", nil), "${{ always() }}"),
		withIf(pstep("echo", "bad-if", nil), "${{ 42 }}"),
		pstep("echo", "tail", nil))

	f := k.createFreight("1.0.0", "")
	ps := map[string]kargoapi.Promotion{}
	for _, st := range []string{"soft", "flow", "retry", "timeout", "severity"} {
		ps[st] = k.promote(st, f.Name)
	}
	for st, p := range ps {
		ps[st] = k.finished(p.Name)
	}
	check := func(stage string, phase kargoapi.PromotionPhase, message string, want ...string) kargoapi.Promotion {
		t.Helper()
		p := ps[stage]
		if p.Status.Phase != phase || p.Status.Message != message {
			t.Errorf("%s: %s %q, want %s %q", stage, p.Status.Phase, p.Status.Message, phase, message)
		}
		if got := steps(p); !slices.Equal(got, want) {
			t.Errorf("%s: steps %v, want %v", stage, got, want)
		}
		return p
	}
	attempts := func(p kargoapi.Promotion, action string, phase client.Phase, n int64) {
		t.Helper()
		a, ok := k.actions(p.Name)[action]
		if !ok || a.Phase != phase || a.Attempts != n {
			t.Errorf("%s %s: %s after %d attempts (exists %v), want %s after %d", p.Spec.Stage, action, a.Phase, a.Attempts, ok, phase, n)
		}
	}

	// A failure with continueOnError is recorded, and counts for nothing.
	p := check("soft", kargoapi.PromotionPhaseSucceeded, "", "fail-soft=Failed", "after-soft=Succeeded", "on-failure=Skipped")
	if m := record(p, "fail-soft"); !m.ContinueOnError || !strings.Contains(m.Message, "HTTP (500) response met failure criteria") {
		t.Errorf("fail-soft: %+v", m)
	}
	if m := record(p, "on-failure"); m.Message != `skipped because "${{ failure() }}" evaluated to false` {
		t.Errorf("on-failure: %q", m.Message)
	}
	if n := rec.count("/ok/soft-promo"); n != 1 { // step vars over the Promotion's
		t.Errorf("after-soft: %d requests to /ok/soft-promo, want 1", n)
	}

	// After a failure: skipped without `if`, run by failure(), always()
	// and status(); the worst step is the Promotion's phase and message.
	p = ps["flow"]
	check("flow", kargoapi.PromotionPhaseFailed, record(p, "fail-hard").Message,
		"fail-hard=Failed", "skipped=Skipped", "cleanup=Succeeded", "on-success=Skipped", "always=Succeeded", "status=Succeeded")
	if m := record(p, "skipped"); m.Message != "skipped because an earlier step failed or errored" || m.StartedAt == nil {
		t.Errorf("skipped: %+v", m)
	}
	for path, n := range map[string]int{"/fail/flow": 1, "/never/flow": 0, "/cleanup/flow": 1, "/always/flow": 1, "/status/flow": 1} {
		if got := rec.count(path); got != n {
			t.Errorf("%s: %d requests, want %d", path, got, n)
		}
	}
	if acts := k.actions(p.Name); len(acts) != 5 || acts["step-2"].Phase != "" || acts["step-1"].Phase != client.FAILED {
		t.Errorf("flow's run: %d actions, step-1 %s (skipped steps run no action)", len(acts), acts["step-1"].Phase)
	}

	// errorThreshold 3: two errors, then success; 2: two errors, Errored.
	p = ps["retry"]
	msg := record(p, "broken").Message
	check("retry", kargoapi.PromotionPhaseErrored, msg, "flaky=Succeeded", "broken=Errored")
	if !strings.HasPrefix(msg, `step "broken" met error threshold of 2: `) || !strings.Contains(msg, "failed to parse response") {
		t.Errorf("broken: %q", msg)
	}
	// errorCount is the consecutive failed attempts (Kargo counts the error
	// before comparing with the threshold): 0 after a success, 2 for broken.
	if m, b := record(p, "flaky"), record(p, "broken"); m.ErrorCount != 0 || b.ErrorCount != 2 {
		t.Errorf("error counts: flaky %d, broken %d; want 0, 2", m.ErrorCount, b.ErrorCount)
	}
	attempts(p, "step-1", client.SUCCEEDED, 3)
	attempts(p, "step-2", client.FAILED, 2)
	if a, b := rec.count("/flaky/retry"), rec.count("/broken/retry"); a != 3 || b != 2 {
		t.Errorf("requests: flaky %d, broken %d; want 3, 2", a, b)
	}

	// retry.timeout bounds the attempt.
	p = check("timeout", kargoapi.PromotionPhaseErrored, `step "nap" timed out after 1s`, "nap=Errored", "after=Succeeded")
	attempts(p, "step-1", client.TIMEDOUT, 1)

	// Errored outranks Failed; nothing runs kind "nope"; an `if` must be a
	// boolean.
	p = check("severity", kargoapi.PromotionPhaseErrored, `no promotion step runner found for kind "nope"`,
		"fail=Failed", "nope=Errored", "bad-if=Errored", "tail=Skipped")
	if m := record(p, "bad-if"); m.Message != `error checking if step "bad-if" should be skipped: expression must evaluate to a boolean` {
		t.Errorf("bad-if: %q", m.Message)
	}
	if acts := k.actions(p.Name); len(acts) != 2 {
		t.Errorf("severity's run has %d actions, want the root and step-1", len(acts))
	}
}

// Every error of the Freight and Promotion API, with Kargo's messages;
// none creates anything. A Promotion's spec is immutable, through kubectl
// too.
func TestPromotionErrors(t *testing.T) {
	k := newKProject(t, srv)
	k.createStage("a", direct(), nil, pstep("echo", "e", nil))
	k.createStage("b", from("a"), nil, pstep("echo", "e", nil))
	k.createStage("cf", direct(), nil)
	k.createStage("tasky", direct(), nil, kargoapi.PromotionStep{As: "t", Task: &kargoapi.PromotionTaskReference{Name: "deploy-task"}})
	f := k.createFreight("1.0.0", "one")
	problem := func(method, path, body string, code int, want string) {
		t.Helper()
		r := k.do(method, path, body)
		prob := r.problem(t, code)
		found := strings.Contains(prob.Detail, want)
		for _, e := range prob.Errors { // field errors
			found = found || strings.Contains(e.Detail, want)
		}
		if !found {
			t.Errorf("%s %s %s: %s, want %q", method, path, body, r.body, want)
		}
	}
	promote := func(stage, body string, code int, want string) {
		t.Helper()
		problem(http.MethodPost, "/stages/"+stage+"/promotions", body, code, want)
	}
	ref := fmt.Sprintf(`{"freight":%q}`, f.Name)
	either := "exactly one of freight or freightAlias should not be empty"
	promote("a", `{}`, http.StatusBadRequest, either)
	promote("a", fmt.Sprintf(`{"freight":%q,"freightAlias":"one"}`, f.Name), http.StatusBadRequest, either)
	promote("nope", ref, http.StatusNotFound, `Stage "nope" not found`)
	promote("a", `{"freight":"x"}`, http.StatusNotFound, fmt.Sprintf(`freight "x" not found in namespace %q`, k.name))
	promote("a", `{"freightAlias":"x"}`, http.StatusNotFound, fmt.Sprintf(`freight with alias "x" not found in namespace %q`, k.name))
	promote("b", ref, http.StatusBadRequest, fmt.Sprintf(`Freight %q is not available to Stage "b"`, f.Name))
	promote("cf", ref, http.StatusBadRequest, "no promotion")
	promote("tasky", ref, http.StatusUnprocessableEntity, "promotion steps referencing a PromotionTask are not supported")
	promote("tasky", ref, http.StatusUnprocessableEntity, `step "t" references PromotionTask "deploy-task"`)
	problem(http.MethodPost, "/stages/a/promotions/downstream", ref, http.StatusBadRequest, fmt.Sprintf(`Freight %q is not available to downstream Stage "b"`, f.Name))
	problem(http.MethodPost, "/stages/b/promotions/downstream", ref, http.StatusNotFound, `stage "b" has no downstream stages`)
	problem(http.MethodPost, "/stages/nope/promotions/downstream", ref, http.StatusNotFound, `Stage "nope" not found`)
	problem(http.MethodPost, "/stages/a/promotions/downstream", `{}`, http.StatusBadRequest, either)
	problem(http.MethodGet, "/stages/nope/promotions", "", http.StatusNotFound, `Stage "nope" not found`)
	problem(http.MethodGet, "/promotions/nope", "", http.StatusNotFound, `Promotion "nope" not found`)
	problem(http.MethodPost, "/promotions/nope/abort", "", http.StatusNotFound, `Promotion "nope" not found`)
	problem(http.MethodGet, "/freight/nope", "", http.StatusNotFound, fmt.Sprintf(`freight "nope" not found in namespace %q`, k.name))
	problem(http.MethodPost, "/freight/nope/approve?stage=a", "", http.StatusNotFound, `freight "nope" not found`)
	problem(http.MethodPost, "/freight/one/approve?stage=nope", "", http.StatusNotFound, `Stage "nope" not found`)
	if r := k.do(http.MethodPost, "/freight/one/approve", ""); r.code != http.StatusBadRequest {
		t.Errorf("approve without a Stage: HTTP %d %s", r.code, r.body)
	}
	problem(http.MethodPost, "/freight", `{"origin":{"kind":"Warehouse","name":"w"}}`, http.StatusBadRequest,
		"freight must contain at least one commit, image, or chart")
	problem(http.MethodPost, "/freight", `{"origin":{"kind":"Nope","name":"w"},"commits":[{"repoURL":"https://github.com/x/y","id":"abc"}]}`,
		http.StatusBadRequest, `"Nope"`)
	dup := `{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"ghcr.io/example/app","tag":"1.0.0","digest":"sha256:1.0.0"}]}`
	problem(http.MethodPost, "/freight", dup, http.StatusConflict, "already exists")
	if got := k.promotionNames(""); len(got) != 0 {
		t.Fatalf("refused requests created Promotions %v", got)
	}

	// A commit's Freight, named by the hash of its artifacts.
	c := into[kargoapi.Freight](t, k.postFreight(`{"origin":{"kind":"Warehouse","name":"w"},"commits":[{"repoURL":"https://github.com/x/y","id":"abc"}]}`), http.StatusCreated)
	if len(c.Name) != 40 || c.Alias == "" || c.Name == f.Name {
		t.Errorf("commit Freight %q alias %q", c.Name, c.Alias)
	}

	// The spec is immutable; the Promotion runs, and an abort once it has
	// ended changes nothing.
	p := k.promote("a", f.Name)
	kc := newKubectl(t)
	if out, errs, ok := kc.run("", "patch", "promotion", "-n", k.name, p.Name, "--type", "merge", "-p", `{"spec":{"freight":"x"}}`); ok || !strings.Contains(errs, "spec is immutable") {
		t.Errorf("kubectl patch of the spec: ok %v: %s%s", ok, out, errs)
	}
	if p = k.finished(p.Name); p.Status.Phase != kargoapi.PromotionPhaseSucceeded || p.Spec.Freight != f.Name {
		t.Errorf("Promotion to a: %s %q, freight %s", p.Status.Phase, p.Status.Message, p.Spec.Freight)
	}
	aborted := into[kargoapi.Promotion](t, k.abort(p.Name), http.StatusOK)
	if aborted.Status.Phase != kargoapi.PromotionPhaseSucceeded || aborted.Annotations[kargoapi.AnnotationKeyAbort] != "" {
		t.Errorf("abort of a finished Promotion: %s, annotations %v", aborted.Status.Phase, aborted.Annotations)
	}
}

// within polls cond every 10 ms for up to timeout and reports whether it
// came to hold (eventually that does not fail the test).
func within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Freight in a Stage's current collection is currentlyIn it, since it came
// (Kargo's Stage controller, syncFreight); a Stage whose source requires a
// soak time gets Freight once it has soaked that long upstream; Freight
// that leaves a Stage keeps its longest soak there.
func TestFreightSoak(t *testing.T) {
	k := newKProject(t, srv)
	k.createStage("test", direct(), nil, pstep("echo", "e", nil))
	soak := from("test")
	soak.RequiredSoakTime = &metav1.Duration{Duration: time.Second}
	k.createStage("soak", soak, nil, pstep("echo", "e", nil))
	f1, f2 := k.createFreight("1.0.0", ""), k.createFreight("2.0.0", "")
	if p := k.finished(k.promote("test", f1.Name).Name); p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Fatalf("Promotion to test: %s %q", p.Status.Phase, p.Status.Message)
	}
	k.waitVerified(f1.Name, "test")
	in := func(freight, stage string) bool { f := k.freight(freight); return f.IsCurrentlyIn(stage) }
	if !within(3*time.Second, func() bool { return in(f1.Name, "test") }) {
		t.Errorf("Freight %s in test's current collection: status %s, want currentlyIn test", f1.Name, mustMarshal(t, k.freight(f1.Name).Status))
	}
	var last stageReply
	if !within(5*time.Second, func() bool {
		last = k.postPromotion("soak", fmt.Sprintf(`{"freight":%q}`, f1.Name))
		return last.code == http.StatusCreated
	}) {
		t.Errorf("promote to soak (1s in test required) for 5 s: HTTP %d %s", last.code, last.body)
	}
	if p := k.finished(k.promote("test", f2.Name).Name); p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Fatalf("second Promotion to test: %s %q", p.Status.Phase, p.Status.Message)
	}
	if !within(3*time.Second, func() bool {
		f := k.freight(f1.Name)
		return !f.IsCurrentlyIn("test") && f.Status.VerifiedIn["test"].LongestCompletedSoak != nil && in(f2.Name, "test")
	}) {
		t.Errorf("after %s replaced it in test, %s's status is %s, want its longest soak in test recorded", f2.Name, f1.Name, mustMarshal(t, k.freight(f1.Name).Status))
	}
}

// TestPromotionLongNames: a Stage named near the limit and a step alias
// longer than an action's short name still promote (the run's names are
// cut to fit, the Promotion's are Kargo's).
func TestPromotionLongNames(t *testing.T) {
	k := newKProject(t, srv)
	stage := "a-stage-with-a-rather-long-name-" + strings.Repeat("x", 40)
	alias := "an-alias-longer-than-the-sixty-three-characters-of-a-short-name"
	k.createStage(stage, direct(), nil, pstep("echo", alias, nil))
	f := k.createFreight("long", "")
	p := k.finished(k.promote(stage, f.Name).Name)
	if p.Status.Phase != kargoapi.PromotionPhaseSucceeded || record(p, alias).Status != kargoapi.PromotionStepStatusSucceeded {
		t.Fatalf("Promotion %s ended %s (%s), step %+v", p.Name, p.Status.Phase, p.Status.Message, record(p, alias))
	}
}
