package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
	"sigs.k8s.io/yaml"

	"taskactions/api"

	"taskactions/internal/auth"
	"taskactions/internal/sse"
)

// StartingConfig is what the server needs to answer while it starts, before
// its control plane and caches are up.
type StartingConfig struct {
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	AllowedHosts  HostAllowlist
	SSE           sse.Config
	// Ready is closed once API serves the real routes.
	Ready <-chan struct{}
	API   func() http.Handler
	// HoldStreams bounds how long a stream request waits (default 60s).
	HoldStreams time.Duration
	Log         zerolog.Logger
}

// Starting answers while the server starts. /healthz says it is alive;
// /readyz says why it is not ready; a stream request from a caller who may
// read it is held open and served once the API is (a plain EventSource
// given a 503 would never come back); anything else is a 503 problem with
// Retry-After. The browser guards apply as they do later.
func Starting(cfg StartingConfig) http.Handler {
	if cfg.HoldStreams <= 0 {
		cfg.HoldStreams = time.Minute
	}
	r := chi.NewRouter()
	r.Use(withRequestID(cfg.Log), recoverPanics, wellFormedURLs, guardHost(cfg.AllowedHosts))
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		respondJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		respondJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": "starting: control plane and caches are not up yet"})
	})
	for pattern, operationID := range streamRoutes() {
		r.Method(http.MethodGet, BasePath+pattern, holdStream(cfg, operations[operationID]))
	}
	r.NotFound(notReady)
	r.MethodNotAllowed(notReady)
	return r
}

// streamRoutes are the document's stream operations (GETs tagged
// streams) by path. Read with a plain YAML decode: the starting server
// answers before the document is loaded and validated in full.
func streamRoutes() map[string]string {
	var doc struct {
		Paths map[string]struct {
			Get *struct {
				OperationID string   `json:"operationId"`
				Tags        []string `json:"tags"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		panic(fmt.Sprintf("the embedded OpenAPI document: %v", err)) // built in: a test reads it
	}
	routes := map[string]string{}
	for path, item := range doc.Paths {
		if item.Get != nil && slices.Contains(item.Get.Tags, "streams") {
			routes[path] = item.Get.OperationID
		}
	}
	return routes
}

// streamEvents are the names of the events that carry a stream's items
// (x-sse-events of the document's stream schemas, but for synced, reset
// and eof): the event label of the stream metrics.
func streamEvents() []string {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Events map[string]string `json:"x-sse-events"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		panic(fmt.Sprintf("the embedded OpenAPI document: %v", err)) // built in: a test reads it
	}
	var names []string
	for _, schema := range doc.Components.Schemas {
		for name := range schema.Events {
			if name != "synced" && name != "reset" && name != "eof" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

func notReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	writeProblem(w, r, errNotReady)
}

// holdStream authenticates and authorizes the stream as the API will, by
// its operation's entry, then holds it until the API serves it.
func holdStream(cfg StartingConfig, rl operation) http.Handler {
	return requireSubject(cfg.Authenticator, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := auth.Attributes{Verb: rl.verb, Project: chi.URLParam(r, "project"), Domain: chi.URLParam(r, "domain"), Kube: rl.kube}
		if rl.verb != "" { // the projects stream filters what it sends instead
			if err := cfg.Authorizer.Authorize(r.Context(), auth.SubjectFrom(r.Context()), attrs); err != nil {
				writeProblem(w, r, err)
				return
			}
		}
		// The API routes the request afresh: with this router's route
		// context left in, its patterns would be appended to this one's and
		// the request would match no operation of the document.
		r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
		sse.Hold(w, r, cfg.Ready, cfg.API, cfg.SSE, cfg.HoldStreams)
	}))
}
