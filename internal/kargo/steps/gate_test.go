package steps

import (
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/kargo/promotions"
)

// The gate admits a round of a Promotion's step action only once the
// Promotion records the step Running in its current start, with its
// working directory on this disk; it holds the others, and refuses them
// once its patience is out. Actions that are no Promotion's steps are not
// its business.
func TestGate(t *testing.T) {
	running := []kargoapi.StepExecutionMetadata{{Alias: "a", Status: kargoapi.PromotionStepStatusSucceeded}, {Alias: "b", Status: kargoapi.PromotionStepStatusRunning}}
	promo := func(start string, md []kargoapi.StepExecutionMetadata) *kargoapi.Promotion {
		p := &kargoapi.Promotion{}
		p.Name, p.Namespace = "test.01jabcdefghjkmnpqrstvwxyz0.abc1234", "demo"
		if start != "" {
			p.Annotations = map[string]string{promotions.StartAnnotation: start}
		}
		p.Spec.Steps = []kargoapi.PromotionStep{{Uses: "http"}, {Uses: "sleep"}}
		p.Status.StepExecutionMetadata = md
		return p
	}
	tests := []struct {
		name     string
		promo    *kargoapi.Promotion
		domain   string
		parent   string // "" the root action's name
		action   string
		noDir    bool
		wait     string // while patient
		refusal  string // once out of patience; "" admitted
		admitted bool
	}{
		{name: "the step in flight", promo: promo("", running), action: "step-2", admitted: true},
		{name: "the step in flight of start 2", promo: promo("2", running), action: "step-2-start-2", admitted: true},
		{name: "another domain", promo: promo("", nil), domain: "development", action: "step-1", admitted: true},
		{name: "not a child of a Promotion's root", promo: promo("", nil), parent: "a0", action: "step-1", admitted: true},
		{name: "not a step's name", promo: promo("", nil), action: "promotion", admitted: true},
		{name: "not recorded yet", promo: promo("", running[:1]), action: "step-2",
			wait: "waiting for the Promotion to record the step", refusal: "is not a running step of a Promotion"},
		{name: "a step that has ended", promo: promo("", running), action: "step-1",
			wait: "waiting for the Promotion to record the step", refusal: "is not a running step of a Promotion"},
		{name: "no Promotion", action: "step-1",
			wait: "waiting for the Promotion to record the step", refusal: "is not a running step of a Promotion"},
		{name: "a step of start 1 once the Promotion is in start 2", promo: promo("2", running), action: "step-2",
			wait: "waiting for the Promotion to record the step", refusal: "is a step of the Promotion's start 1, not of the one running (start 2)"},
		{name: "no working directory here", promo: promo("", running), action: "step-2", noDir: true,
			wait: "waiting for the Promotion's working directory", refusal: "working directory is not on this replica's disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dirs := Dirs{Root: t.TempDir()}
			if !tc.noDir {
				if err := dirs.Make("demo", "r"); err != nil {
					t.Fatal(err)
				}
			}
			g := NewGate(noPromotions{tc.promo}, dirs)
			domain := tc.domain
			if domain == "" {
				domain = promotions.Domain
			}
			parent := tc.parent
			if parent == "" {
				parent = promotions.RootAction
			}
			task := &plugins.TaskContext{Project: "demo", Domain: domain, Run: "r", Action: tc.action, Parent: parent, UID: "u", Attempt: 1}
			wait, refused := g.Admit(task)
			if tc.admitted {
				if wait != "" || refused != nil {
					t.Fatalf("held (%q) or refused (%v), want admitted", wait, refused)
				}
				return
			}
			if wait != tc.wait || refused != nil {
				t.Fatalf("Admit = %q, %v; want to wait: %q", wait, refused, tc.wait)
			}
			g.patience = 0
			wait, refused = g.Admit(task)
			if wait != "" || refused == nil || refused.Code != "NotAPromotionStep" || !strings.Contains(refused.Message, tc.refusal) {
				t.Fatalf("out of patience: %q, %+v; want refused with %q", wait, refused, tc.refusal)
			}
		})
	}
}

// What the gate held and no one asks about again (an attempt aborted
// while held) does not stay with it.
func TestGateForgets(t *testing.T) {
	g := NewGate(noPromotions{}, Dirs{Root: t.TempDir()})
	g.patience = time.Millisecond
	old := &plugins.TaskContext{Domain: promotions.Domain, Run: "r", Action: "step-1", Parent: promotions.RootAction, UID: "old", Attempt: 1}
	if wait, _ := g.Admit(old); wait == "" {
		t.Fatal("admitted a step of no Promotion")
	}
	time.Sleep(5 * time.Millisecond)
	g.Admit(&plugins.TaskContext{Domain: promotions.Domain, Run: "r", Action: "step-1", Parent: promotions.RootAction, UID: "new", Attempt: 1})
	if _, ok := g.waiting[plugins.AttemptKey(old)]; ok || len(g.waiting) != 1 {
		t.Errorf("held attempts: %v, want only the new one", g.waiting)
	}
}
