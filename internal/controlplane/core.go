package controlplane

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	discoveryaggregated "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes/scheme"
)

// The core group ("", version v1) as far as the embedded control plane
// answers it: namespaces. This server keeps no Namespace objects, and any
// namespace can hold TaskActions, so every namespace exists. Clients that
// look a kind up in discovery before using it (a RESTMapper: kubectl,
// controller-runtime, Flyte's Actions service, which ensures its namespace
// before it enqueues) need the core group listed at /api and /api/v1, in
// the aggregated form client-go asks for first and in the plain one.

// namespaceResource is what discovery says of namespaces: get and create
// (an existing namespace, which is every one), nothing else.
var namespaceResource = metav1.APIResource{
	Name: "namespaces", SingularName: "namespace", Namespaced: false,
	Version: "v1", Kind: "Namespace", Verbs: metav1.Verbs{"create", "get"}, ShortNames: []string{"ns"},
}

// installCoreGroup serves /api (APIVersions, or the aggregated
// APIGroupDiscoveryList), /api/v1 (APIResourceList) and the namespaces
// under it. All go on the non-go-restful mux: a go-restful web service at
// /api would claim every path below it.
func installCoreGroup(s *genericapiserver.GenericAPIServer, addresses discovery.Addresses) error {
	resources, err := endpoints.ConvertGroupVersionIntoToDiscovery([]metav1.APIResource{namespaceResource})
	if err != nil {
		return fmt.Errorf("core discovery: %w", err)
	}
	agg := s.AggregatedLegacyDiscoveryGroupManager
	agg.AddGroupVersion("", apidiscoveryv2.APIVersionDiscovery{
		Version: "v1", Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
	})
	if addresses == nil {
		addresses = discovery.DefaultAddresses{}
	}
	root := discoveryaggregated.WrapAggregatedDiscoveryToHandler(
		discovery.NewLegacyRootAPIHandler(addresses, scheme.Codecs, "/api"), agg, agg)
	v1 := discovery.NewAPIVersionHandler(scheme.Codecs, corev1.SchemeGroupVersion,
		discovery.APIResourceListerFunc(func() []metav1.APIResource {
			r := namespaceResource
			r.Version = "" // the list names its group version once
			return []metav1.APIResource{r}
		}))
	mux := s.Handler.NonGoRestfulMux
	mux.Handle("/api", onlyGet(root))
	mux.Handle("/api/", onlyGet(root))
	mux.Handle("/api/v1", onlyGet(v1))
	mux.Handle("/api/v1/", onlyGet(v1))
	mux.Handle("/api/v1/namespaces", namespaces{})
	mux.HandlePrefix("/api/v1/namespaces/", namespaces{})
	return nil
}

// onlyGet refuses anything but a read of a discovery document.
func onlyGet(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			writeStatus(w, req, apierrors.NewMethodNotSupported(corev1.Resource(""), strings.ToLower(req.Method)))
			return
		}
		h.ServeHTTP(w, req)
	})
}

// maxNamespaceBody bounds a namespace creation: a Namespace is a name and
// a few labels.
const maxNamespaceBody = 64 << 10

// namespaces answers GET /api/v1/namespaces/<name> with an Active
// Namespace of that name, and POST /api/v1/namespaces with the Namespace
// it was given, created (201): nothing is stored, since every namespace
// exists. kubectl get <kind> <name> -n <ns> probes the namespace after a
// NotFound (cli-runtime resource.Info.Get) and, on a 404 there, reports
// "the server could not find the requested resource" instead of the
// object's own NotFound.
type namespaces struct{}

func (namespaces) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	gr := corev1.Resource("namespaces")
	name, isItem := strings.CutPrefix(req.URL.Path, "/api/v1/namespaces/")
	switch {
	case !isItem && req.Method == http.MethodPost:
		createNamespace(w, req)
	case !isItem:
		writeStatus(w, req, apierrors.NewMethodNotSupported(gr, verbOf(req.Method, "list")))
	case name == "" || strings.Contains(name, "/"):
		writeStatus(w, req, apierrors.NewNotFound(gr, name))
	case req.Method != http.MethodGet:
		writeStatus(w, req, apierrors.NewMethodNotSupported(gr, verbOf(req.Method, "get")))
	default:
		writeNamespace(w, req, http.StatusOK, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
}

func createNamespace(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxNamespaceBody+1))
	if err != nil {
		writeStatus(w, req, apierrors.NewBadRequest(fmt.Sprintf("read the body: %v", err)))
		return
	}
	if len(body) > maxNamespaceBody {
		writeStatus(w, req, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a Namespace is limited to %d bytes", maxNamespaceBody)))
		return
	}
	ns := &corev1.Namespace{}
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, ns); err != nil {
		writeStatus(w, req, apierrors.NewBadRequest(fmt.Sprintf("decode the Namespace: %v", err)))
		return
	}
	if errs := validation.IsDNS1123Label(ns.Name); len(errs) > 0 {
		writeStatus(w, req, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind(), ns.Name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), ns.Name, strings.Join(errs, "; "))}))
		return
	}
	writeNamespace(w, req, http.StatusCreated, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name, Labels: ns.Labels}})
}

func writeNamespace(w http.ResponseWriter, req *http.Request, code int, ns *corev1.Namespace) {
	ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
	ns.Status.Phase = corev1.NamespaceActive
	writeObject(w, req, code, ns)
}

func writeObject(w http.ResponseWriter, req *http.Request, code int, obj runtime.Object) {
	responsewriters.WriteObjectNegotiated(scheme.Codecs.WithoutConversion(), negotiation.DefaultEndpointRestrictions, corev1.SchemeGroupVersion, w, req, code, obj, false)
}

func writeStatus(w http.ResponseWriter, req *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion, w, req)
}

// verbOf names the Kubernetes verb of a request refused, for its message.
func verbOf(method, read string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return read
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}
