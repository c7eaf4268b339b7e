package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// Freight and Promotions over real HTTP: these helpers and the pipeline
// test; promotions_steps_test.go has Kargo's step rules (against a local
// recorder) and the API's errors; promotions_restart_test.go a Promotion's
// life: abort, the Stage's queue, the streams, and a SIGKILL.

// promoTaskTypes are the task types a server for Promotions runs: the
// shared server's, and http (the http step's plugin).
const promoTaskTypes = "echo,sleep,process,http,analysis-measurement"

// Freight moves test → uat, uat2 → prod (All of uat and uat2), each Stage
// running http steps against a local server: availability by verification
// and by approval, Kargo's messages when Freight is not available, the
// Promotion's status and run, the Stage's status, the Freight's.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestPromotionPipeline(t *testing.T) {
	s := promoServer(t)
	rec := newRecorder(t)
	k := newKProject(t, s)
	vars := []kargoapi.ExpressionVariable{{Name: "x", Value: "x-of-${{ ctx.stage }}"}}
	k.createStage("test", direct(), vars, pipelineSteps(rec)...)
	k.createStage("uat", from("test"), vars, pipelineSteps(rec)...)
	k.createStage("uat2", from("test"), vars, pipelineSteps(rec)...)
	all := from("uat", "uat2")
	all.AvailabilityStrategy = kargoapi.FreightAvailabilityStrategyAll
	k.createStage("prod", all, vars, pipelineSteps(rec)...)
	f := k.createFreight("1.0.0", "first")
	notAvailable := func(stage, freight string) {
		t.Helper()
		r := k.postPromotion(stage, fmt.Sprintf(`{"freight":%q}`, freight))
		want := fmt.Sprintf("Freight %q is not available to Stage %q", freight, stage)
		if prob := r.problem(t, http.StatusBadRequest); !strings.Contains(prob.Detail, want) {
			t.Errorf("promote %s to %s: %q, want %q", freight, stage, prob.Detail, want)
		}
	}

	// Not verified in test yet: not available to uat.
	notAvailable("uat", f.Name)

	// test, by alias.
	r := k.postPromotion("test", `{"freightAlias":"first"}`)
	p := into[kargoapi.Promotion](t, r, http.StatusCreated)
	if !strings.HasPrefix(p.Name, "test.") || !strings.HasSuffix(p.Name, "."+f.Name[:7]) || len(runOf(p.Name)) != 26 ||
		p.Spec.Stage != "test" || p.Spec.Freight != f.Name || len(p.Spec.Steps) != 2 || len(p.Spec.Vars) != 1 {
		t.Errorf("created Promotion %s: spec %+v", p.Name, p.Spec)
	}
	if a := p.Annotations[kargoapi.AnnotationKeyCreateActor]; !strings.HasPrefix(a, "subject:") {
		t.Errorf("create-actor annotation %q", a)
	}
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseSucceeded || p.Status.Message != "" {
		t.Fatalf("Promotion to test: %s %q, steps %v", p.Status.Phase, p.Status.Message, steps(p))
	}
	if got := steps(p); !slices.Equal(got, []string{"login=Succeeded", "deploy=Succeeded"}) {
		t.Errorf("steps %v", got)
	}
	for _, m := range p.Status.StepExecutionMetadata {
		if m.StartedAt == nil || m.FinishedAt == nil || m.FinishedAt.Before(m.StartedAt) || m.ErrorCount != 0 {
			t.Errorf("step record %+v", m)
		}
	}
	if got := mustMarshal(t, stateOf(t, p)); got != `{"deploy":{"code":200},"login":{"token":"tok-test"}}` {
		t.Errorf("status.state %s", got)
	}
	if p.Status.Freight == nil || p.Status.Freight.Name != f.Name || p.Status.FinishedAt == nil {
		t.Errorf("status freight %+v, finishedAt %v", p.Status.Freight, p.Status.FinishedAt)
	}
	// The requests, as templated.
	login, deploy := rec.to("/token"), rec.to("/deploy/test")
	if len(login) != 1 || len(deploy) != 1 {
		t.Fatalf("%d logins and %d deploys to test, want 1 each", len(login), len(deploy))
	}
	if h := login[0]; h.Method != "POST" || h.Header.Get("X-Stage") != "test" || h.Header.Get("X-Var") != "x-of-test" || h.Body != "stage=test&x=x-of-test" {
		t.Errorf("login request %+v", h)
	}
	if h := deploy[0]; h.Method != "PUT" || h.Header.Get("Authorization") != "Bearer tok-test" || h.Body != "freight="+f.Name {
		t.Errorf("deploy request %+v", h)
	}
	// The run: the root is the Promotion, each step a child.
	acts := k.actions(p.Name)
	if len(acts) != 3 {
		t.Errorf("run %s has %d actions, want 3", runOf(p.Name), len(acts))
	}
	root := acts["promotion"]
	if root.Phase != client.SUCCEEDED || root.TaskType != "kargo-promotion" || value(root.ShortName) != p.Name || root.ParentActionName != nil {
		t.Errorf("root action: %s %s %q", root.Phase, root.TaskType, value(root.ShortName))
	}
	for i, alias := range []string{"login", "deploy"} {
		a := acts[fmt.Sprintf("step-%d", i+1)]
		if a.Phase != client.SUCCEEDED || a.TaskType != "http" || value(a.ShortName) != alias || value(a.ParentActionName) != "promotion" || a.Attempts != 1 {
			t.Errorf("step-%d: %s %s %q parent %q attempts %d", i+1, a.Phase, a.TaskType, value(a.ShortName), value(a.ParentActionName), a.Attempts)
		}
	}
	// test's status follows; the Freight is verified there.
	var st kargoapi.Stage
	eventually(t, 10*time.Second, "test's status after its Promotion", func() bool {
		st = k.stage("test")
		c := condition(st, kargoapi.ConditionTypeReady)
		return st.Status.LastPromotion != nil && st.Status.LastPromotion.Name == p.Name && c != nil && c.Status == "True"
	})
	if lp := st.Status.LastPromotion; lp.Status == nil || lp.Status.Phase != kargoapi.PromotionPhaseSucceeded || lp.Freight == nil || lp.Freight.Name != f.Name {
		t.Errorf("lastPromotion %+v", lp)
	}
	if cur := st.Status.FreightHistory.Current(); cur == nil || !cur.Includes(f.Name) || st.Status.CurrentPromotion != nil {
		t.Errorf("freightHistory %+v, currentPromotion %+v", st.Status.FreightHistory, st.Status.CurrentPromotion)
	}
	k.waitVerified(f.Name, "test")

	// prod needs uat and uat2 (All); downstream of test are both, at once.
	notAvailable("prod", f.Name)
	ps := into[kargoapi.PromotionList](t, k.postDownstream("test", fmt.Sprintf(`{"freight":%q}`, f.Name)), http.StatusCreated)
	var targets []string
	for _, d := range ps.Items {
		targets = append(targets, d.Spec.Stage)
		if d := k.finished(d.Name); d.Status.Phase != kargoapi.PromotionPhaseSucceeded {
			t.Errorf("downstream Promotion to %s: %s %q", d.Spec.Stage, d.Status.Phase, d.Status.Message)
		}
	}
	if slices.Sort(targets); !slices.Equal(targets, []string{"uat", "uat2"}) {
		t.Fatalf("downstream of test promoted to %v, want uat uat2", targets)
	}
	for _, st := range []string{"uat", "uat2"} {
		if d := rec.to("/deploy/" + st); len(d) != 1 || d[0].Header.Get("Authorization") != "Bearer tok-"+st {
			t.Errorf("deploys to %s: %+v", st, d)
		}
	}
	k.waitVerified(f.Name, "uat")
	k.waitVerified(f.Name, "uat2")
	if d := k.finished(k.promote("prod", f.Name).Name); d.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Errorf("Promotion to prod: %s %q", d.Status.Phase, d.Status.Message)
	}
	eventually(t, 10*time.Second, "prod's current Freight", func() bool {
		h := k.stage("prod").Status.FreightHistory
		return h.Current() != nil && h.Current().Includes(f.Name)
	})

	// Freight approved for uat: available there without verification, not
	// for uat2, so the downstream promotion makes none (all or nothing).
	f2 := k.createFreight("2.0.0", "second")
	if got := listFreightNames(t, k); !slices.Equal(got, []string{f2.Name, f.Name}) {
		t.Errorf("freight %v, want newest first %v", got, []string{f2.Name, f.Name})
	}
	if got := k.freight("second"); got.Name != f2.Name {
		t.Errorf("freight by alias second: %s", got.Name)
	}
	notAvailable("uat", f2.Name)
	downstream := func(want string) {
		t.Helper()
		r := k.postDownstream("test", fmt.Sprintf(`{"freight":%q}`, f2.Name))
		msg := fmt.Sprintf("Freight %q is not available to downstream Stage %q", f2.Name, want)
		if prob := r.problem(t, http.StatusBadRequest); !strings.Contains(prob.Detail, msg) {
			t.Errorf("downstream of %s: %q, want %q", f2.Name, prob.Detail, msg)
		}
	}
	downstream("uat")
	approved := into[kargoapi.Freight](t, k.approve(f2.Name, "uat"), http.StatusOK)
	if !approved.IsApprovedFor("uat") || approved.IsApprovedFor("uat2") {
		t.Errorf("approved for %v, want uat", approved.Status.ApprovedFor)
	}
	into[kargoapi.Freight](t, k.approve("second", "uat"), http.StatusOK) // again: no-op
	before := len(k.promotionNames("uat"))
	downstream("uat2")
	if n := len(k.promotionNames("uat")); n != before {
		t.Errorf("a refused downstream promotion created %d Promotions of uat", n-before)
	}
	r = k.postPromotion("uat", `{"freightAlias":"second"}`)
	if d := k.finished(into[kargoapi.Promotion](t, r, http.StatusCreated).Name); d.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Errorf("Promotion of approved Freight to uat: %s %q", d.Status.Phase, d.Status.Message)
	}
	k.waitVerified(f2.Name, "uat")
	notAvailable("prod", f2.Name) // verified in uat, not in uat2

	// Every Promotion, oldest first; a Stage's.
	names := k.promotionNames("")
	if len(names) != 5 || !slices.IsSorted(names) {
		t.Errorf("project's Promotions %v, want 5, oldest first", names)
	}
	if got := k.promotionNames("uat"); len(got) != 2 || !strings.HasPrefix(got[0], "uat.") {
		t.Errorf("uat's Promotions %v", got)
	}
}

// waitVerified waits until Freight is verified in a Stage.
func (k *kproject) waitVerified(freight, stage string) {
	k.t.Helper()
	eventually(k.t, 10*time.Second, freight+" verified in "+stage, func() bool {
		f := k.freight(freight)
		return f.IsVerifiedIn(stage) && f.Status.VerifiedIn[stage].VerifiedAt != nil
	})
}

func listFreightNames(t testing.TB, k *kproject) []string {
	t.Helper()
	l := into[kargoapi.FreightList](t, k.listFreight(), http.StatusOK)
	var names []string
	for _, f := range l.Items {
		names = append(names, f.Name)
	}
	return names
}

func value[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
