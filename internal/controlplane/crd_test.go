package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// widgetCRD is a small CRD whose schema description says whose it is.
func widgetCRD(owner string) []byte {
	return fmt.Appendf(nil, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.test
spec:
  group: example.test
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: %s
`, owner)
}

// TestForeignCRDIsKept: a CRD that this binary did not install (Kargo's
// Stage CRD on a cluster with Kargo) is used as it is when KeepForeign is
// set, and reported; one this binary installed is updated to its schema.
func TestForeignCRDIsKept(t *testing.T) {
	ctx := t.Context()
	cfg := shared.RESTConfig()
	// Someone else installs it first, without our annotation.
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: widgetCRD("theirs")}); err != nil {
		t.Fatal(err)
	}
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds := ac.ApiextensionsV1().CustomResourceDefinitions()
	theirs, err := crds.Get(ctx, "widgets.example.test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(theirs.Annotations, installedBy)
	if _, err := crds.Update(ctx, theirs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	description := func() string {
		c, err := crds.Get(ctx, "widgets.example.test", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description
	}

	foreign, err := EnsureCRDs(ctx, cfg, CRD{YAML: widgetCRD("ours"), KeepForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(foreign, []string{"widgets.example.test"}) || description() != "theirs" {
		t.Fatalf("foreign = %v, schema %q; want the foreign CRD kept as it is", foreign, description())
	}

	// Without KeepForeign (TaskAction's CRD), ours replaces it; from then
	// on it is ours, and KeepForeign updates it.
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: widgetCRD("ours")}); err != nil {
		t.Fatal(err)
	}
	foreign, err = EnsureCRDs(ctx, cfg, CRD{YAML: widgetCRD("ours, v2"), KeepForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(foreign) != 0 || description() != "ours, v2" {
		t.Fatalf("foreign = %v, schema %q; want our own CRD updated", foreign, description())
	}
}

// TestOwnedCRDIsKeptThoughOurs: a CRD this binary installed is left as it
// is once the CRD named by OwnedWith exists (Rollouts installed after this
// server had installed Rollouts' analysis CRDs): the owner's version
// stays, and it is reported as foreign.
func TestOwnedCRDIsKeptThoughOurs(t *testing.T) {
	ctx := t.Context()
	cfg := shared.RESTConfig()
	named := func(kind, description string) []byte {
		return []byte(strings.NewReplacer("widget", kind, "Widget", strings.ToUpper(kind[:1])+kind[1:]).Replace(string(widgetCRD(description))))
	}
	owned := CRD{YAML: named("sprocket", "ours"), KeepForeign: true, OwnedWith: "cogs.example.test"}
	if foreign, err := EnsureCRDs(ctx, cfg, owned); err != nil || len(foreign) != 0 {
		t.Fatalf("no owner yet: foreign %v, %v; want ours installed", foreign, err)
	}
	// The owner comes, with its own version of the CRD.
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: named("cog", "the owner")}, CRD{YAML: named("sprocket", "the owner's")}); err != nil {
		t.Fatal(err)
	}
	foreign, err := EnsureCRDs(ctx, cfg, owned)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ac.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "sprockets.example.test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description; !slices.Equal(foreign, []string{"sprockets.example.test"}) || got != "the owner's" {
		t.Fatalf("foreign = %v, schema %q; want the owner's CRD kept as it is", foreign, got)
	}
}

// TestCurrentCRDIsNotWritten: a CRD already at this binary's schema (the
// chart installed it, or an earlier start did) is left alone, so that on a
// cluster the server needs only get on CRDs; a changed schema is written.
func TestCurrentCRDIsNotWritten(t *testing.T) {
	ctx := t.Context()
	cfg := shared.RESTConfig()
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	version := func() string {
		c, err := ac.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.example.test", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.ResourceVersion
	}
	gadget := func(description string) []byte {
		return []byte(strings.NewReplacer("widget", "gadget", "Widget", "Gadget").Replace(string(widgetCRD(description))))
	}
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: gadget("v1")}); err != nil {
		t.Fatal(err)
	}
	first := version()
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: gadget("v1")}); err != nil {
		t.Fatal(err)
	}
	if again := version(); again != first {
		t.Fatalf("resourceVersion %s -> %s: a CRD already current was written again", first, again)
	}
	if _, err := EnsureCRDs(ctx, cfg, CRD{YAML: gadget("v2")}); err != nil {
		t.Fatal(err)
	}
	if changed := version(); changed == first {
		t.Fatal("resourceVersion unchanged: a CRD with another schema was not updated")
	}
}

// TestNewCRDTakesCreatesOnceEnsured: the API server holds back every
// create of a CRD's objects for two seconds after the CRD is established,
// so EnsureCRDs returns only once that time has passed; a first start's
// first enqueue then does not wait.
func TestNewCRDTakesCreatesOnceEnsured(t *testing.T) {
	ctx := t.Context()
	yaml := strings.NewReplacer("widget", "gadget", "Widget", "Gadget").Replace(string(widgetCRD("ours")))
	if _, err := EnsureCRDs(ctx, shared.RESTConfig(), CRD{YAML: []byte(yaml)}); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	c := apiextensionsclient.NewForConfigOrDie(shared.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	t.Cleanup(func() { _ = c.Delete(context.Background(), "gadgets.example.test", metav1.DeleteOptions{}) })
	crd, err := c.Get(ctx, "gadgets.example.test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == "Established" {
			// LastTransitionTime has whole seconds: allow for the rounding down.
			if held := returned.Sub(cond.LastTransitionTime.Time); held < 2*time.Second {
				t.Fatalf("EnsureCRDs returned %v after the CRD was established; creates are held back for 2s", held)
			}
			return
		}
	}
	t.Fatal("the CRD has no Established condition")
}
