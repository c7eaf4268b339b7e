package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	crdoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"taskactions/internal/kargo/webhooks"
)

// adminUser is who the data-dir token authenticates as.
var adminUser = &user.DefaultInfo{
	Name:   "taskactions-admin",
	Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated},
}

// apiServer is a running apiextensions API server: it serves CRDs and
// their custom resources, nothing else (no Pods, Namespaces, Leases or
// garbage collector).
type apiServer struct {
	cancel context.CancelFunc
	exited chan struct{} // closed when the server returned, with err set
	err    error
	port   int
}

// apiServerConfig is what startAPIServer needs; all of it comes from the
// data dir.
type apiServerConfig struct {
	etcdEndpoint string
	certDir      string
	token        string
	listener     net.Listener
}

// watchDrainPeriod bounds how long a stop lets open watches end; each is
// told to end at once, and they are let go at 200 a second or faster.
const watchDrainPeriod = 5 * time.Second

// startAPIServer builds the server configuration by hand rather than through
// the options' Config(): that one needs a core-API informer factory, which a
// CRD-only server has no source for. Delegated authn/authz, admission and
// priority-and-fairness all need a core API too, so they are off; a static
// token authenticator and a privileged-group authorizer take their place.
func startAPIServer(cfg apiServerConfig) (*apiServer, error) {
	o, err := apiServerOptions(cfg)
	if err != nil {
		return nil, err
	}
	gc, err := genericConfig(o, cfg.token)
	if err != nil {
		return nil, err
	}
	config := &apiserver.Config{
		GenericConfig: gc,
		ExtraConfig: apiserver.ExtraConfig{
			CRDRESTOptionsGetter: crdoptions.NewCRDRESTOptionsGetter(*o.RecommendedOptions.Etcd, gc.ResourceTransformers, gc.StorageObjectCountTracker),
			ServiceResolver:      noServices{},
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, gc.LoopbackClientConfig, noopoteltrace.NewTracerProvider()),
		},
	}
	server, err := config.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("create api server: %w", err)
	}
	installRootDiscovery(server.GenericAPIServer)
	if err := installCoreGroup(server.GenericAPIServer, gc.DiscoveryAddresses); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &apiServer{cancel: cancel, exited: make(chan struct{}), port: o.RecommendedOptions.SecureServing.BindPort}
	go func() {
		defer close(s.exited)
		s.err = server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
	}()
	return s, nil
}

// apiServerOptions are the apiextensions server's options for an API
// server of this process alone: etcd in process, no watch cache, no
// authentication or admission plug-ins of its own.
func apiServerOptions(cfg apiServerConfig) (*crdoptions.CustomResourceDefinitionsServerOptions, error) {
	o := crdoptions.NewCustomResourceDefinitionsServerOptions(io.Discard, io.Discard)
	ro := o.RecommendedOptions
	ro.Etcd.StorageConfig.Transport.ServerList = []string{cfg.etcdEndpoint}
	// No watch cache: it keeps a decoded copy of every object, which for
	// custom resources is a generic map, several times the size of the
	// object, in this same process; this server's own informers are the
	// cache its reads are served from. Lists and watches go to etcd, which
	// is in process too.
	ro.Etcd.EnableWatchCache = false
	ro.SecureServing.Listener = cfg.listener
	ro.SecureServing.ServerCert.CertDirectory = cfg.certDir
	ro.SecureServing.ServerCert.PairName = "apiserver"
	ro.Authentication = nil
	ro.Authorization = nil
	ro.CoreAPI = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	o.ServerRunOptions.ShutdownDelayDuration = 0
	// A stop ends the watches of clients outside the process (kubectl get
	// -w, a server on the kubeconfig): by default the API server does not
	// track them and waits for them for its whole request timeout (60 s),
	// since without a watch cache nothing else closes them before etcd.
	o.ServerRunOptions.ShutdownWatchTerminationGracePeriod = watchDrainPeriod
	if err := o.Complete(); err != nil {
		return nil, fmt.Errorf("complete api server options: %w", err)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("validate api server options: %w", err)
	}
	if err := ro.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	return o, nil
}

// genericConfig is the generic API server's configuration from the
// options, with the admin token as its only credential and Kargo's
// webhooks as its admission.
func genericConfig(o *crdoptions.CustomResourceDefinitionsServerOptions, token string) (*genericapiserver.RecommendedConfig, error) {
	gc := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	if err := o.ServerRunOptions.ApplyTo(&gc.Config); err != nil {
		return nil, fmt.Errorf("apply server run options: %w", err)
	}
	if err := o.RecommendedOptions.ApplyTo(gc); err != nil {
		return nil, fmt.Errorf("apply recommended options: %w", err)
	}
	if err := o.APIEnablement.ApplyTo(&gc.Config, apiserver.DefaultAPIResourceConfigSource(), apiserver.Scheme); err != nil {
		return nil, fmt.Errorf("apply api enablement: %w", err)
	}
	// /version: the generic server reports component-base's version, which
	// without -ldflags is "v0.0.0-master+$Format:%H$"; kubectl cannot parse
	// that. Report the Kubernetes release of the libraries built in.
	gc.EffectiveVersion = servedVersion{gc.EffectiveVersion, kubeLibraryVersion}
	// OpenAPI: the apiextensions server publishes CRD schemas only when
	// both v2 and v3 are configured. Its CRD OpenAPI controllers start only
	// if the static v2 spec exists (PrepareRun builds it from OpenAPIConfig),
	// so without OpenAPIConfig not even /openapi/v3 has the CRDs.
	defs := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, namer)
	gc.OpenAPIConfig.Info.Title = "taskactions"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	gc.OpenAPIV3Config.Info.Title = "taskactions"
	gc.Authentication.Authenticator = authenticatorfactory.NewFromTokens(map[string]*user.DefaultInfo{token: adminUser}, nil)
	gc.Authorization.Authorizer = authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)
	// Admission: no webhooks (they need Services); Kargo's webhooks run
	// in process instead (package webhooks).
	gc.AdmissionControl = admission.NewChainHandler(webhooks.NewAdmission(), newOwnFieldsAdmission(FieldManager))
	return gc, nil
}

// waitReady polls /readyz until the server answers 200.
func (s *apiServer) waitReady(ctx context.Context, cfg *rest.Config) error {
	client, err := rest.UnversionedRESTClientFor(withCodec(cfg))
	if err != nil {
		return fmt.Errorf("readyz client: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.exited:
			return false, fmt.Errorf("api server exited while starting: %w", s.exitErr())
		default:
		}
		status := 0
		last = client.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Error()
		return status == 200, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("api server not ready: %w (last: %v)", err, last)
	}
	return err
}

// stop shuts the server down and waits for it, which closes its etcd
// clients and its watches.
func (s *apiServer) stop() error {
	s.cancel()
	<-s.exited
	if errors.Is(s.err, context.Canceled) {
		return nil
	}
	return s.err
}

// exitErr is why the server returned (once exited is closed): its error,
// or that it ended without one.
func (s *apiServer) exitErr() error {
	if s.err == nil {
		return errors.New("it ended without an error")
	}
	return s.err
}

func withCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

// noServices resolves no service: CRD conversion webhooks need a core API,
// which the embedded control plane does not have.
type noServices struct{}

func (noServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return nil, fmt.Errorf("service %s/%s: the embedded control plane has no services", namespace, name)
}
