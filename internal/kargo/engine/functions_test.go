package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func freightScope() *FreightScope {
	w1, w2 := kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w1"}, kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w2"}
	refs := []kargoapi.FreightReference{
		{Name: "f1", Origin: w1,
			Images:  []kargoapi.Image{{RepoURL: "ghcr.io/x/app", Tag: "1.2.3", Digest: "sha256:1"}, {RepoURL: "ghcr.io/x/both", Tag: "a"}},
			Commits: []kargoapi.GitCommit{{RepoURL: "https://github.com/x/cfg.git", ID: "abc", Branch: "main"}},
			Charts:  []kargoapi.Chart{{RepoURL: "https://charts.x", Name: "app", Version: "0.1.0"}, {RepoURL: "oci://ghcr.io/x/chart", Version: "2.0.0"}}},
		{Name: "f2", Origin: w2, Images: []kargoapi.Image{{RepoURL: "ghcr.io/x/both", Tag: "b"}}},
	}
	meta := &kargoapi.Freight{}
	meta.Name = "f1"
	_ = meta.Status.UpsertMetadata("build", map[string]any{"by": "ci"})
	return &FreightScope{
		Finder: Finder{Project: "demo", Freight: refs, Requests: []kargoapi.FreightRequest{{Origin: w1}, {Origin: w2}}},
		Freight: func(_ context.Context, name string) (*kargoapi.Freight, error) {
			if name == "f1" {
				return meta, nil
			}
			return nil, nil
		},
	}
}

func TestFreightFunctions(t *testing.T) {
	env := map[string]any{"vars": map[string]any{"imageRepo": "ghcr.io/x/app"}}
	for _, c := range []struct{ expr, want string }{
		{`${{ imageFrom(vars.imageRepo).Tag }}`, `"1.2.3"`},
		{`${{ imageFrom("ghcr.io/x/app") }}`, `{"digest":"sha256:1","repoURL":"ghcr.io/x/app","tag":"1.2.3"}`},
		{`${{ imageFrom("ghcr.io/x/both", warehouse("w2")).Tag }}`, `"b"`},
		{`${{ imageFrom("ghcr.io/x/none") }}`, `null`},
		{`${{ commitFrom("https://GITHUB.com/x/cfg").ID }}`, `"abc"`},
		{`${{ chartFrom("https://charts.x", "app").Version }}`, `"0.1.0"`},
		{`${{ chartFrom("oci://ghcr.io/x/chart").Version }}`, `"2.0.0"`},
		{`${{ chartFrom("https://charts.x", "app", warehouse("w1")).Version }}`, `"0.1.0"`},
		{`${{ freightMetadata("f1", "build").by }}`, `"ci"`},
		{`${{ freightMetadata("f9", "build") }}`, `null`},
		{`${{ warehouse("w1") }}`, `{"kind":"Warehouse","name":"w1"}`},
	} {
		got, err := EvaluateConfig([]byte(`{"v":`+jsonString(c.expr)+`}`), env, FreightFunctions(freightScope())...)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if b, _ := json.Marshal(got["v"]); string(b) != c.want {
			t.Errorf("%s = %s, want %s", c.expr, b, c.want)
		}
	}
	for expr, want := range map[string]string{
		`${{ imageFrom("ghcr.io/x/both") }}`:           "multiple requested Freight could potentially provide a container image from repository ghcr.io/x/both: please provide a Freight origin to disambiguate",
		`${{ chartFrom("https://charts.x", "nope") }}`: `chart "nope" from repo https://charts.x not found in referenced Freight`,
		`${{ warehouse("") }}`:                         "name must not be empty",
		`${{ freightMetadata("f1", "") }}`:             "metadata key must not be empty",
	} {
		if _, err := EvaluateConfig([]byte(`{"v":`+jsonString(expr)+`}`), env, FreightFunctions(freightScope())...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", expr, err, want)
		}
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// With Warehouses, a missing one is Kargo's error; their subscriptions
// decide the origin.
type warehouses map[string][]Subscription

func (w warehouses) Subscriptions(_ context.Context, _, name string) ([]Subscription, bool, error) {
	s, ok := w[name]
	return s, ok, nil
}

func TestFinderWithWarehouses(t *testing.T) {
	s := freightScope()
	s.Finder.Warehouses = warehouses{"w1": {{Image: "ghcr.io/x/app"}}, "w2": {{Image: "ghcr.io/x/both"}}}
	got, err := EvaluateTemplate(`${{ imageFrom("ghcr.io/x/both").Tag }}`, nil, FreightFunctions(s)...)
	if err != nil || got != "b" {
		t.Fatalf("%v %v: w2 subscribes to both, w1 does not", got, err)
	}
	s.Finder.Warehouses = warehouses{"w1": nil}
	if _, err := EvaluateTemplate(`${{ imageFrom("ghcr.io/x/app") }}`, nil, FreightFunctions(s)...); err == nil ||
		!strings.Contains(err.Error(), `Warehouse "w2" not found in namespace "demo"`) {
		t.Fatalf("missing Warehouse: %v", err)
	}
}

// The Promotion's vars and configs see the functions (Decide).
func TestDecideWithFreightFunctions(t *testing.T) {
	cfg := &apiextensionsv1.JSON{Raw: []byte(`{"images":[{"image":"${{ vars.imageRepo }}","tag":"${{ imageFrom(vars.imageRepo).Tag }}"}]}`)}
	d := Decide(Input{
		Steps:   []kargoapi.PromotionStep{{Uses: "kustomize-set-image", Config: cfg}},
		Vars:    []kargoapi.ExpressionVariable{{Name: "imageRepo", Value: "ghcr.io/x/app"}, {Name: "tag", Value: "${{ imageFrom(vars.imageRepo).Tag }}"}},
		Freight: freightScope(),
	})
	if !d.Run {
		t.Fatalf("decision %+v", d)
	}
	if b, _ := json.Marshal(d.Config); string(b) != `{"images":[{"image":"ghcr.io/x/app","tag":"1.2.3"}]}` {
		t.Fatalf("config %s", b)
	}
}
