package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

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
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": "starting: control plane and caches are not up yet"})
	})
	for pattern, operationID := range streamPatterns {
		r.Method(http.MethodGet, BasePath+pattern, holdStream(cfg, rules[operationID]))
	}
	r.NotFound(notReady)
	r.MethodNotAllowed(notReady)
	return r
}

// streamPatterns are the paths of the operations tagged streams, with
// their operations, whose rules authorize a held stream
// (TestStartingHoldsEveryStream keeps the map whole).
var streamPatterns = map[string]string{
	"/project-events": "streamProjects",
	"/projects/{project}/domains/{domain}/events":                                  "streamRunSummaries",
	"/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/logs/events": "streamActionLogs",
	"/projects/{project}/domains/{domain}/runs/{run}/events":                       "streamRunEvents",
	"/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/events":      "streamActionEvents",
	"/projects/{project}/stage-events":                                             "streamProjectStages",
	"/projects/{project}/stages/{stage}/events":                                    "streamStage",
	"/projects/{project}/promotion-events":                                         "streamProjectPromotions",
	"/projects/{project}/stages/{stage}/promotions/events":                         "streamStagePromotions",
}

func notReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	writeProblem(w, r, errNotReady)
}

// holdStream authenticates and authorizes the stream as the API will, by
// its operation's rule, then holds it until the API serves it.
func holdStream(cfg StartingConfig, rl rule) http.Handler {
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
