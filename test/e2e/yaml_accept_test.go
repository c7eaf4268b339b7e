package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// A Stage read with Accept: application/yaml (what a kubectl user asks
// for, -o yaml) is the same object as in JSON, in YAML; JSON stays the
// default, and one who prefers JSON by q-value gets JSON.
func TestKargoObjectsInYAMLOnAccept(t *testing.T) {
	ctx := context.Background()
	c := srv.api
	project := newRun().Project + "-yaml"
	st := kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: kargoapi.StageSpec{
		RequestedFreight:  []kargoapi.FreightRequest{{Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w"}, Sources: kargoapi.FreightSources{Direct: true}}},
		PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{Steps: []kargoapi.PromotionStep{{Uses: "echo"}}}},
	}}
	cs, err := c.CreateStageWithResponse(ctx, project, st)
	want(t, cs, err, http.StatusCreated)

	plain, err := c.GetStageWithResponse(ctx, project, "test")
	want(t, plain, err, http.StatusOK)
	if ct := plain.HTTPResponse.Header.Get("Content-Type"); ct != "application/json" || plain.JSON200 == nil {
		t.Fatalf("without Accept: %s", ct)
	}
	accept := func(v string) client.RequestEditorFn {
		return func(_ context.Context, r *http.Request) error { r.Header.Set("Accept", v); return nil }
	}
	y, err := c.GetStageWithResponse(ctx, project, "test", accept("application/yaml"))
	want(t, y, err, http.StatusOK)
	if ct := y.HTTPResponse.Header.Get("Content-Type"); ct != "application/yaml" {
		t.Fatalf("Accept application/yaml: Content-Type %q, body %s", ct, y.Body)
	}
	if !strings.Contains(string(y.Body), "\nspec:\n") || strings.HasPrefix(string(y.Body), "{") {
		t.Errorf("not YAML: %s", y.Body)
	}
	// The generated client decodes it, by the fields' JSON names.
	if y.YAML200 == nil || y.YAML200.Name != "test" || y.YAML200.ResourceVersion != plain.JSON200.ResourceVersion || len(y.YAML200.Spec.RequestedFreight) != 1 {
		t.Errorf("the client's YAML200: %+v", y.YAML200)
	}
	var fromYAML kargoapi.Stage
	if err := yaml.Unmarshal(y.Body, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if fromYAML.Name != "test" || fromYAML.ResourceVersion != plain.JSON200.ResourceVersion || len(fromYAML.Spec.RequestedFreight) != 1 {
		t.Errorf("the YAML Stage %+v differs from the JSON one %+v", fromYAML.ObjectMeta, plain.JSON200.ObjectMeta)
	}
	j, err := c.GetStageWithResponse(ctx, project, "test", accept("application/yaml;q=0.5, application/json"))
	want(t, j, err, http.StatusOK)
	if ct := j.HTTPResponse.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("JSON preferred by q: Content-Type %q", ct)
	}
	// A problem stays a problem, whatever was asked.
	missing, err := c.GetStageWithResponse(ctx, project, "nosuch", accept("application/yaml"))
	want(t, missing, err, http.StatusNotFound)
	if ct := missing.HTTPResponse.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("404 in YAML: Content-Type %q", ct)
	}
}
