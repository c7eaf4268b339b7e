package controlplane

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

// A client-go client that maps kinds through discovery (a RESTMapper, as
// kubectl, controller-runtime and Flyte's Actions service use) finds the
// Namespace kind in the core group, aggregated and not, and gets and
// creates namespaces with it.
func TestCoreGroupThroughARESTMapper(t *testing.T) {
	cfg := shared.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, aggregated := range []bool{true, false} {
		var d discovery.DiscoveryInterface = dc
		if !aggregated {
			d = dc.WithLegacy()
		}
		groups, resources, err := d.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("aggregated %v: discovery: %v", aggregated, err)
		}
		if groups[0].Name != "" || groups[0].PreferredVersion.Version != "v1" {
			t.Errorf("aggregated %v: the first group is %q %q, want the core group v1", aggregated, groups[0].Name, groups[0].PreferredVersion.Version)
		}
		if !listsNamespaces(resources) {
			t.Errorf("aggregated %v: v1 does not list namespaces: %+v", aggregated, resources)
		}
	}

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	m, err := mapper.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	if err != nil {
		t.Fatalf("RESTMapping of Namespace: %v", err)
	}
	if m.Resource != corev1.SchemeGroupVersion.WithResource("namespaces") || m.Scope.Name() != "root" {
		t.Errorf("Namespace maps to %v, scope %s", m.Resource, m.Scope.Name())
	}
	// kubectl's short names: ns.
	short := restmapper.NewShortcutExpander(mapper, memory.NewMemCacheClient(dc), nil)
	if gvr, err := short.ResourceFor(schema.GroupVersionResource{Resource: "ns"}); err != nil || gvr.Resource != "namespaces" {
		t.Errorf("the short name ns: %v %v", gvr, err)
	}

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nsc := dyn.Resource(m.Resource)
	got, err := nsc.Get(t.Context(), "flyte", metav1.GetOptions{})
	if err != nil || got.GetName() != "flyte" || phaseOf(got) != "Active" {
		t.Errorf("get namespace flyte: %v %v", got, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"},
	}}
	created, err := nsc.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil || created.GetName() != "team-a" || phaseOf(created) != "Active" {
		t.Errorf("create namespace team-a: %v %v", created, err)
	}
	obj.SetName("Not_A_Label")
	if _, err := nsc.Create(t.Context(), obj, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("create namespace Not_A_Label: %v, want Invalid", err)
	}
	if err := nsc.Delete(t.Context(), "team-a", metav1.DeleteOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete a namespace: %v, want MethodNotSupported (discovery does not offer it)", err)
	}

	// The typed client speaks protobuf when asked.
	pcfg := *cfg
	pcfg.ContentType = "application/vnd.kubernetes.protobuf"
	kc, err := kubernetes.NewForConfig(&pcfg)
	if err != nil {
		t.Fatal(err)
	}
	if ns, err := kc.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{}); err != nil || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("create over protobuf: %v %v", ns, err)
	}
}

// Past its bound a namespace creation is refused, not read.
func TestNamespaceCreationIsBounded(t *testing.T) {
	kc, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", maxNamespaceBody)
	res := kc.CoreV1().RESTClient().Post().AbsPath("/api/v1/namespaces").
		SetHeader("Content-Type", "application/json").
		Body([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"big","labels":{"a":"` + big + `"}}}`)).Do(t.Context())
	var code int
	res.StatusCode(&code)
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over %d bytes: HTTP %d %v, want 413", maxNamespaceBody, code, res.Error())
	}
}

func listsNamespaces(rls []*metav1.APIResourceList) bool {
	for _, rl := range rls {
		if rl.GroupVersion != "v1" {
			continue
		}
		for _, r := range rl.APIResources {
			if r.Name == "namespaces" && r.Kind == "Namespace" && !r.Namespaced {
				return true
			}
		}
	}
	return false
}

func phaseOf(u *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return p
}
