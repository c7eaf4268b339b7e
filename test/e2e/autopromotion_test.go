package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// Kargo's auto-promotion, as a ProjectConfig turns it on: the config at
// /projects/{p}/config with Kargo's rules, then Freight created through
// the API promoted with no request to the Stage a policy enables, and not
// to the one it does not, nor to one no policy names; then kubectl.
//
// It reads better whole: one project's story, in the order a user meets it.
func TestAutoPromotion(t *testing.T) {
	k := newKProject(t, srv)
	say := pstep("echo", "say", nil)
	k.createStage("test", direct(), nil, say)
	k.createStage("uat", from("test"), nil, say)
	k.createStage("other", direct(), nil, say)

	// No config yet; then Kargo's refusals.
	if prob := k.getConfig().problem(t, http.StatusNotFound); prob.Detail != fmt.Sprintf("ProjectConfig %q not found", k.name) {
		t.Errorf("a project without a config: %q", prob.Detail)
	}
	for body, want := range map[string]string{
		configDoc("other", policy("test", true)):                          fmt.Sprintf(`name "other" must match project name %q`, k.name),
		configDoc("", policy("test", true), policy("test", false)):        `stage name already defined at spec.promotionPolicies[0]`,
		configDoc("", `{"stage":"test","stageSelector":{"name":"test"}}`): "PromotionPolicy must have exactly one of stage or stageSelector set",
	} {
		prob := k.putConfig(body).problem(t, http.StatusBadRequest)
		if len(prob.Errors) != 1 || !strings.Contains(prob.Errors[0].Detail, want) {
			t.Errorf("put %s: %+v, want %q", body, prob.Errors, want)
		}
	}

	// Auto-promotion for test only: uat's policy says no, other has none.
	cfg := into[kargoapi.ProjectConfig](t, k.putConfig(configDoc("", policy("test", true), `{"stage":"uat"}`)), http.StatusCreated)
	if cfg.Name != k.name || cfg.Kind != "ProjectConfig" || len(cfg.Spec.PromotionPolicies) != 2 {
		t.Errorf("created %s %s: %+v", cfg.Kind, cfg.Name, cfg.Spec)
	}
	// A put without a version replaces the config; one with the version
	// it was read at is refused once the config changed.
	stale := mustMarshal(t, cfg)
	cfg = into[kargoapi.ProjectConfig](t, k.putConfig(configDoc("", policy("test", true), `{"stage":"uat"}`,
		`{"stageSelector":{"matchLabels":{"tier":"none"}},"autoPromotionEnabled":true}`)), http.StatusOK)
	if r := k.putConfig(stale); r.code != http.StatusConflict {
		t.Errorf("a put from a stale version: HTTP %d %s, want 409", r.code, r.body)
	}

	// New Freight goes to test with no one asking, as Kargo builds it.
	f := k.createFreight("1.0.0", "")
	p := k.autoPromotion("test", f.Name)
	if !strings.HasPrefix(p.Name, "test.") || !strings.HasSuffix(p.Name, "."+f.Name[:7]) || len(runOf(p.Name)) != 26 || len(p.Spec.Steps) != 1 {
		t.Errorf("auto-promotion %s: %+v", p.Name, p.Spec)
	}
	if a, ok := p.Annotations[kargoapi.AnnotationKeyCreateActor]; ok {
		t.Errorf("create-actor %q: Kargo's controller names no actor", a)
	}
	if p = k.finished(p.Name); p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Fatalf("the auto-promotion: %s %q", p.Status.Phase, p.Status.Message)
	}
	k.untilCurrent("test", f.Name)

	// f is now available to uat (verified in test), and other has had it
	// all along: neither is promoted. Two refreshes each: the second is
	// handled after the whole reconcile that handled the first.
	for range 2 {
		for _, s := range []string{"uat", "other"} {
			stageRefresh(t, k.name, s, true).stage(t, http.StatusOK)
		}
	}
	for _, s := range []string{"uat", "other"} {
		if names := k.promotionNames(s); len(names) != 0 {
			t.Errorf("%s, not enabled, has Promotions %v", s, names)
		}
	}

	// Newer Freight: promoted too; the first is not promoted again.
	f2 := k.createFreight("1.1.0", "")
	p2 := k.finished(k.autoPromotion("test", f2.Name).Name)
	k.untilCurrent("test", f2.Name)
	if n := len(k.promotionNames("test")); n != 2 || p2.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Errorf("test has %d Promotions (want 2); the second %s", n, p2.Status.Phase)
	}

	// Turned on for uat by a replace (a glob): it gets the newest Freight
	// verified in test.
	cfg = into[kargoapi.ProjectConfig](t, k.getConfig(), http.StatusOK)
	cfg.Spec.PromotionPolicies[1] = kargoapi.PromotionPolicy{StageSelector: &kargoapi.PromotionPolicySelector{Name: "glob:ua*"}, AutoPromotionEnabled: true}
	into[kargoapi.ProjectConfig](t, k.putConfig(mustMarshal(t, cfg)), http.StatusOK)
	k.finished(k.autoPromotion("uat", f2.Name).Name)

	// kubectl sees the config, with Kargo's columns.
	kc := newKubectl(t)
	table := kc.must("", "get", "projectconfigs", "-n", k.name)
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 ||
		!slices.Equal(strings.Fields(lines[0]), []string{"NAME", "READY", "STATUS", "AGE"}) || !strings.HasPrefix(lines[1], k.name+" ") {
		t.Errorf("kubectl get projectconfigs:\n%s", table)
	}

	// Deleted: no more auto-promotion; the project has no config.
	if r := k.deleteConfig(); r.code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d %s", r.code, r.body)
	}
	if r := k.getConfig(); r.code != http.StatusNotFound {
		t.Errorf("after the delete: HTTP %d %s", r.code, r.body)
	}
	f3 := k.createFreight("1.2.0", "")
	for range 2 {
		stageRefresh(t, k.name, "test", true).stage(t, http.StatusOK)
	}
	for _, name := range k.promotionNames("test") {
		if k.promotion(name).Spec.Freight == f3.Name {
			t.Errorf("promoted %s with no config: %s", f3.Name, name)
		}
	}
}

// A ProjectConfig written through kubectl on the embedded control plane
// gets Kargo's webhook rules too.
func TestProjectConfigKubectl(t *testing.T) {
	kc := newKubectl(t)
	ns := newKProject(t, srv).name
	doc := "apiVersion: kargo.akuity.io/v1alpha1\nkind: ProjectConfig\nmetadata: {name: %s}\n" +
		"spec: {promotionPolicies: [{stage: test, autoPromotionEnabled: true}]}\n"
	_, errs, ok := kc.run(fmt.Sprintf(doc, "other"), "apply", "-n", ns, "-f", "-")
	if want := fmt.Sprintf(`name "other" must match project name %q`, ns); ok || !strings.Contains(errs, want) {
		t.Errorf("kubectl apply of a config named other: ok %v, %s; want %q", ok, errs, want)
	}
	kc.must(fmt.Sprintf(doc, ns), "apply", "-n", ns, "-f", "-")
	eventually(t, 10*time.Second, "REST to serve the kubectl ProjectConfig", func() bool {
		return newKProjectNamed(t, ns).getConfig().code == http.StatusOK
	})
}

// configDoc is a ProjectConfig's JSON with the given policies (JSON each);
// name "" leaves the name out.
func configDoc(name string, policies ...string) string {
	meta := "{}"
	if name != "" {
		meta = fmt.Sprintf(`{"name":%q}`, name)
	}
	return fmt.Sprintf(`{"metadata":%s,"spec":{"promotionPolicies":[%s]}}`, meta, strings.Join(policies, ","))
}

// policy is a promotion policy selecting a Stage by name.
func policy(stage string, enabled bool) string {
	return fmt.Sprintf(`{"stageSelector":{"name":%q},"autoPromotionEnabled":%v}`, stage, enabled)
}

func newKProjectNamed(t testing.TB, name string) *kproject {
	return &kproject{t: t, s: srv, name: name}
}

// The ProjectConfig operations through the generated client.

func (k *kproject) getConfig() stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.GetProjectConfigWithResponse(ctx, k.name)
		return r, err
	})
}

func (k *kproject) putConfig(body string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.PutProjectConfigWithBodyWithResponse(ctx, k.name, "application/json", strings.NewReader(body))
		return r, err
	})
}

func (k *kproject) deleteConfig() stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.DeleteProjectConfigWithResponse(ctx, k.name)
		return r, err
	})
}

// autoPromotion waits for the one Promotion of freight to stage, which no
// one asked for, and returns it.
func (k *kproject) autoPromotion(stage, freight string) kargoapi.Promotion {
	k.t.Helper()
	var found []kargoapi.Promotion
	eventually(k.t, 20*time.Second, fmt.Sprintf("the auto-promotion of %s to %s", freight, stage), func() bool {
		found = nil
		for _, name := range k.promotionNames(stage) {
			if p := k.promotion(name); p.Spec.Freight == freight {
				found = append(found, p)
			}
		}
		return len(found) > 0
	})
	if len(found) != 1 {
		k.t.Errorf("%d Promotions of %s to %s, want 1", len(found), freight, stage)
	}
	return found[0]
}

// untilCurrent waits until a Stage's current Freight is freight.
func (k *kproject) untilCurrent(stage, freight string) {
	k.t.Helper()
	eventually(k.t, 10*time.Second, fmt.Sprintf("%s's current Freight to be %s", stage, freight), func() bool {
		st := k.stage(stage)
		return st.Status.FreightHistory.Current().Includes(freight)
	})
}
