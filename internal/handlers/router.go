package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"taskactions/api"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/auth"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/projectconfigs"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kargo/warehouses"
	"taskactions/internal/logs"
	"taskactions/internal/runs"
	"taskactions/internal/sse"
	"taskactions/internal/taskactions"
)

// BasePath is where the API is served.
const BasePath = "/api/v1"

// Config holds the router's dependencies.
type Config struct {
	Manager *taskactions.Manager
	Stages  *stages.Manager
	Freight *freight.Manager
	// Warehouses serves Warehouses.
	Warehouses *warehouses.Manager
	// ProjectConfigs serves each project's ProjectConfig.
	ProjectConfigs *projectconfigs.Manager
	// Promotions serves Promotions.
	Promotions *promotions.Manager
	// Analysis serves Argo Rollouts' AnalysisTemplates,
	// ClusterAnalysisTemplates and AnalysisRuns.
	Analysis *resources.Manager
	Runs     *runs.Service
	// Logs holds the tasks' stdout and stderr.
	Logs    *logs.Store
	SSE     sse.Config
	Metrics *Metrics
	// Ready reports whether the server can serve: nil when the control
	// plane answers and the caches are synced. /readyz calls it.
	Ready func(context.Context) error
	// Synced gates the API: until it is true, API requests get 503.
	Synced func() bool
	// Web serves the dashboard; nil serves none.
	Web http.Handler
	Log zerolog.Logger

	// Authenticator tells who sent a request (auth.Open{} when
	// authentication is off), Authorizer what they may do.
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	// Sessions set and clear the browser's session cookie, and LoginCodes
	// redeem the login link; both nil when authentication is off.
	Sessions   *auth.Sessions
	LoginCodes *auth.LoginCodes
	// Throttle limits failed logins per client address (nil: none).
	Throttle *auth.Throttle
	// ExecuteTaskTypes need the execute verb to enqueue (process).
	ExecuteTaskTypes []string
	// AllowedHosts are the Host names the server answers to; CORSOrigins
	// the foreign origins whose pages may call the API (none by default).
	AllowedHosts HostAllowlist
	CORSOrigins  []string
	// MaxStreams bounds the open event streams (0: no bound).
	MaxStreams int
	// Tracing gives each request a span (tracing.go); nil: tracing is off.
	Tracing trace.TracerProvider
}

// NewRouter returns the server's handler: /api/v1 (generated from the
// OpenAPI document, validated against it), /healthz, /readyz, /metrics,
// /login and the dashboard.
func NewRouter(cfg Config) (http.Handler, error) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		return nil, err
	}
	if err := checkOperations(v.doc); err != nil {
		return nil, err
	}
	doc, err := parseDocument(api.OpenAPI)
	if err != nil {
		return nil, err
	}
	gs, err := guards(cfg)
	if err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Use(append(traceRequests(cfg.Tracing), withRequestID(cfg.Log), recoverPanics, accessLog(cfg.Metrics))...)
	r.Use(gs...)
	r.Use(middleware.GetHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeProblem(w, r, errRouteNotFound) })
	r.MethodNotAllowed(methodNotAllowed(r))
	r.Get("/healthz", func(w http.ResponseWriter, req *http.Request) {
		respondJSON(w, req, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", readyz(cfg.Ready))
	r.Handle("/metrics", requireSubject(cfg.Authenticator, notForTasks(cfg.Metrics.Handler())))
	r.Get("/login", login(cfg.LoginCodes, cfg.Throttle))
	r.Mount(BasePath, apiRouter(cfg, v, doc))
	if cfg.Web != nil {
		r.Handle("/*", cfg.Web)
	}
	return r, nil
}

// guards are the defences of every route against a hostile page in the
// user's browser (guard.go): well-formed URLs, our own Host, CORS only for
// the origins named, and no cross-origin unsafe request but with a bearer
// token.
func guards(cfg Config) ([]func(http.Handler) http.Handler, error) {
	gs := []func(http.Handler) http.Handler{wellFormedURLs, guardHost(cfg.AllowedHosts)}
	if len(cfg.CORSOrigins) > 0 {
		gs = append(gs, cors.Handler(cors.Options{
			AllowedOrigins: cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
			// Range, If-Range and what a log answers with: the tail read
			// of a log (docs/api.md, task logs) from another origin.
			AllowedHeaders: []string{"Authorization", "Content-Type", "Last-Event-ID", "X-Request-ID", "Range", "If-Range"},
			ExposedHeaders: []string{"X-Request-ID", "Retry-After", "Content-Range", "Accept-Ranges", "ETag", "Log-Dropped-Bytes"},
			MaxAge:         600,
		}))
	}
	crossOrigin, err := guardCrossOrigin(cfg.CORSOrigins)
	if err != nil {
		return nil, err
	}
	return append(gs, crossOrigin), nil
}

// apiRouter is /api/v1: the generated routes, each request refused unless
// its body, if it has one, is declared JSON or YAML, authenticated (unless
// the document says the operation is public), valid, and authorized by the
// operation's entry in the operations table.
func apiRouter(cfg Config, v *validator, doc OpenAPIDocument) http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeProblem(w, r, errRouteNotFound) })
	r.MethodNotAllowed(methodNotAllowed(r))
	r.Use(gate(cfg.Synced), middleware.GetHead, markHead, splitCommaLists(commaListParams(v.doc)), keepRequest)
	srv := &Server{mgr: cfg.Manager, stages: cfg.Stages, freight: cfg.Freight, warehouses: cfg.Warehouses, configs: cfg.ProjectConfigs, promos: cfg.Promotions, analysis: cfg.Analysis, runs: cfg.Runs, logs: cfg.Logs, authz: cfg.Authorizer, sse: cfg.SSE, metrics: cfg.Metrics, sessions: cfg.Sessions, throttle: cfg.Throttle, streams: newStreamSlots(cfg.MaxStreams), document: doc}
	az := &authorizer{authz: cfg.Authorizer, executeTypes: cfg.ExecuteTaskTypes}
	strict := NewStrictHandlerWithOptions(srv, []StrictMiddlewareFunc{az.middleware}, StrictHTTPServerOptions{
		RequestErrorHandlerFunc:  func(w http.ResponseWriter, r *http.Request, err error) { writeProblem(w, r, badRequest{err}) },
		ResponseErrorHandlerFunc: writeProblem,
	})
	HandlerWithOptions(strict, ChiServerOptions{
		BaseRouter: r,
		// The last runs first: refuse a body that is not JSON or YAML,
		// authenticate, validate, then answer in YAML if asked.
		Middlewares:      []MiddlewareFunc{v.negotiate, v.middleware, authenticate(cfg.Authenticator, v), requireJSON},
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) { writeProblem(w, r, badRequest{err}) },
	})
	return r
}

// gate answers 503 until the cache is synced; the document itself is
// always served.
func gate(synced func() bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if synced != nil && !synced() && !document(r.URL.Path) {
				w.Header().Set("Retry-After", "1")
				writeProblem(w, r, errNotReady)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// document reports whether path is the API document's (YAML or JSON).
func document(path string) bool {
	return path == BasePath+"/openapi.yaml" || path == BasePath+"/openapi.json"
}

// methodNotAllowed answers 405 with the Allow header the route supports.
func methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePath != "" {
			path = rc.RoutePath
		}
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if routes.Match(chi.NewRouteContext(), m, path) {
				w.Header().Add("Allow", m)
			}
		}
		writeProblem(w, r, errMethodNotAllowed)
	}
}

// readyz is 200 when ready and 503 with the reason otherwise.
func readyz(ready func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			respondJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
		respondJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
	}
}
