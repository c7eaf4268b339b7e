package controlplane

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	discoveryaggregated "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/discovery"
	basecompatibility "k8s.io/component-base/compatibility"
)

// What kubectl needs of an API server that the apiextensions server alone
// does not serve: /apis discovery, a /version it can parse, and the core
// group's namespaces (core.go).

// installRootDiscovery serves /apis. The apiextensions server turns the
// generic server's discovery off (Complete sets EnableDiscovery=false): in
// kube-apiserver the aggregator in front of it serves /apis. Its CRD
// discovery controller still feeds the generic server's aggregated
// discovery manager (CRD groups, plus apiextensions.k8s.io from
// InstallAPIGroup), so /apis serves that, as the generic server would with
// discovery on; the unaggregated APIGroupList is derived from it.
// /api is the core group's (core.go).
func installRootDiscovery(s *genericapiserver.GenericAPIServer) {
	agg := s.AggregatedDiscoveryGroupManager
	h := discoveryaggregated.WrapAggregatedDiscoveryToHandler(groupList{agg}, agg, nil)
	s.Handler.GoRestfulContainer.Add(h.GenerateWebService("/apis", metav1.APIGroupList{}))
}

// groupList serves the unaggregated /apis (an APIGroupList) from the
// aggregated discovery document, so the two always agree.
type groupList struct{ agg http.Handler }

const acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func (g groupList) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := req.Clone(req.Context())
	r.Header = http.Header{"Accept": {acceptAggregated}}
	rec := httptest.NewRecorder()
	g.agg.ServeHTTP(rec, r)
	var doc apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); rec.Code != http.StatusOK || err != nil {
		responsewriters.InternalError(w, req, fmt.Errorf("aggregated discovery: status %d: %v", rec.Code, err))
		return
	}
	groups, _, _ := discovery.SplitGroupsAndResources(doc)
	responsewriters.WriteObjectNegotiated(apiserver.Codecs, negotiation.DefaultEndpointRestrictions, schema.GroupVersion{}, w, req, http.StatusOK, groups, false)
}

// servedVersion is the server's effective version with what /version
// reports replaced: without -ldflags, component-base reports
// "v0.0.0-master+$Format:%H$", which kubectl cannot parse.
type servedVersion struct {
	basecompatibility.EffectiveVersion
	gitVersion string
}

func (v servedVersion) Info() *apimachineryversion.Info {
	info := *v.EffectiveVersion.Info()
	info.GitVersion = v.gitVersion
	info.GitCommit = ""
	info.GitTreeState = ""
	info.BuildDate = ""
	return &info
}

// kubeLibraryVersion is the Kubernetes release of the API server
// libraries in go.mod (k8s.io/apiserver v0.X.Y is Kubernetes v1.X.Y); a
// test keeps the two in step.
const kubeLibraryVersion = "v1.37.2"
