package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/auth"
	"taskactions/internal/history"
	"taskactions/internal/journal"
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

// Server implements StrictServerInterface.
type Server struct {
	mgr        *taskactions.Manager
	stages     *stages.Manager
	freight    *freight.Manager
	warehouses *warehouses.Manager
	configs    *projectconfigs.Manager
	promos     *promotions.Manager
	analysis   *resources.Manager
	runs       *runs.Service
	logs       *logs.Store
	authz      auth.Authorizer
	sse        sse.Config
	metrics    *Metrics
	sessions   *auth.Sessions
	throttle   *auth.Throttle
	streams    *streamSlots
	// document is api/openapi.yaml parsed, for getOpenAPIJSON.
	document OpenAPIDocument
}

var _ StrictServerInterface = (*Server)(nil)

func actionID(p ProjectParam, d DomainParam, r RunParam, a ActionParam) taskactions.ActionID {
	return taskactions.ActionID{Project: p, Domain: d, Run: r, Name: a}
}

// EnqueueAction creates an action: 201, or 200 when it already exists.
func (s *Server) EnqueueAction(ctx context.Context, req EnqueueActionRequestObject) (EnqueueActionResponseObject, error) {
	er, err := enqueueRequestOf(req.Body)
	if err != nil {
		return nil, err
	}
	er.MayExecute = s.mayExecute(ctx, er.ID.Project, er.ID.Domain)
	a, created, err := s.mgr.EnqueueView(ctx, er)
	if err != nil {
		return nil, err
	}
	if created {
		return EnqueueAction201JSONResponse(actionOf(&a)), nil
	}
	return EnqueueAction200JSONResponse(actionOf(&a)), nil
}

// ListRuns lists a page of the run summaries of a project and domain.
func (s *Server) ListRuns(ctx context.Context, req ListRunsRequestObject) (ListRunsResponseObject, error) {
	q, err := runQueryOf(req)
	if err != nil {
		return nil, err
	}
	sums, next, err := s.runs.List(ctx, q)
	if err != nil {
		return nil, err
	}
	items := make([]RunSummary, len(sums))
	for i := range sums {
		items[i] = summaryOf(&sums[i])
	}
	return ListRuns200JSONResponse(RunList{Items: items, Continue: optional(next)}), nil
}

// GetRun returns one run summary.
func (s *Server) GetRun(ctx context.Context, req GetRunRequestObject) (GetRunResponseObject, error) {
	sum, err := s.runs.Get(ctx, v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run})
	if errors.Is(err, history.ErrNotFound) {
		// History is behind the control plane (it failed to record, or
		// is about to): the run exists, so not 404.
		run := v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run}
		if live, lerr := s.mgr.ListRunActions(ctx, run); lerr == nil && len(live) > 0 {
			return nil, fmt.Errorf("run %s/%s/%s has %d actions the history store has not recorded yet: %w",
				req.Project, req.Domain, req.Run, len(live), taskactions.ErrHistory)
		}
		return nil, notFound("run " + req.Project + "/" + req.Domain + "/" + req.Run)
	}
	if err != nil {
		return nil, err
	}
	return GetRun200JSONResponse(summaryOf(&sum)), nil
}

// ListRunActions lists a page of the actions of a run.
func (s *Server) ListRunActions(ctx context.Context, req ListRunActionsRequestObject) (ListRunActionsResponseObject, error) {
	run := v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run}
	page := pageOf(req.Params.Limit, req.Params.Continue)
	page.Filter = filterOf(req.Params.Phase, req.Params.Q)
	p, err := s.mgr.RunActions(ctx, run, page)
	if err != nil {
		return nil, err
	}
	return actionList(p), nil
}

// GetAction returns one action, live or retired.
func (s *Server) GetAction(ctx context.Context, req GetActionRequestObject) (GetActionResponseObject, error) {
	u, err := s.mgr.Action(ctx, actionID(req.Project, req.Domain, req.Run, req.Action))
	if err != nil {
		return nil, err
	}
	return actionJSONResponse{u}, nil
}

// ListChildActions lists a page of the direct children of an action (which
// must exist).
func (s *Server) ListChildActions(ctx context.Context, req ListChildActionsRequestObject) (ListChildActionsResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	p, err := s.mgr.ChildActions(ctx, id, pageOf(req.Params.Limit, req.Params.Continue))
	if err != nil {
		return nil, err
	}
	return actionList(p), nil
}

// PutActionStatus records an attempt's status.
func (s *Server) PutActionStatus(ctx context.Context, req PutActionStatusRequestObject) (PutActionStatusResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	ta, err := s.mgr.PutStatus(ctx, id, uint32(req.Body.Attempt), statusUpdateOf(req.Body.Status))
	if err != nil {
		return nil, err
	}
	return PutActionStatus200JSONResponse(actionOfObject(ta)), nil
}

// AbortAction aborts an action and its descendants.
func (s *Server) AbortAction(ctx context.Context, req AbortActionRequestObject) (AbortActionResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	reason := ""
	if req.Body != nil {
		reason = value(req.Body.Reason)
	}
	a, err := s.mgr.AbortAction(ctx, id, reason)
	if errors.Is(err, taskactions.ErrNotFound) {
		// A retired action has finished, which an abort leaves as it is.
		u, err := s.mgr.Action(ctx, id)
		if err != nil {
			return nil, err
		}
		a = u.Action
	} else if err != nil {
		return nil, err
	}
	return AbortAction202JSONResponse(actionOf(&a)), nil
}

// DeleteAction deletes an action; its descendants follow.
func (s *Server) DeleteAction(ctx context.Context, req DeleteActionRequestObject) (DeleteActionResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	if err := s.mgr.DeleteAction(ctx, id, value(req.Params.Abort)); err != nil {
		return nil, err
	}
	return DeleteAction202Response{}, nil
}

// DeleteRun deletes every action of a run.
func (s *Server) DeleteRun(ctx context.Context, req DeleteRunRequestObject) (DeleteRunResponseObject, error) {
	run := v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run}
	if err := s.mgr.DeleteRun(ctx, run, value(req.Params.Abort)); err != nil {
		return nil, err
	}
	return DeleteRun202Response{}, nil
}

// StreamActionEvents streams an action and its direct children.
func (s *Server) StreamActionEvents(ctx context.Context, req StreamActionEventsRequestObject) (StreamActionEventsResponseObject, error) {
	scope := taskactions.Scope{Run: v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run}, Action: req.Action}
	return s.actionStream(ctx, scope, taskactions.Filter{}, lastEventID(req.Params.LastEventID, req.Params.LastEventId)), nil
}

// StreamRunEvents streams every action of a run.
func (s *Server) StreamRunEvents(ctx context.Context, req StreamRunEventsRequestObject) (StreamRunEventsResponseObject, error) {
	scope := taskactions.Scope{Run: v1.RunID{Project: req.Project, Domain: req.Domain, Run: req.Run}}
	filter := filterOf(req.Params.Phase, req.Params.Q)
	st := s.actionStream(ctx, scope, filter, lastEventID(req.Params.LastEventID, req.Params.LastEventId))
	if n := value(req.Params.Window); n > 0 {
		st.src.Window = func(snap []*taskactions.ActionUpdate) ([]*taskactions.ActionUpdate, string) {
			return taskactions.Window(snap, n)
		}
	}
	return st, nil
}

// StreamRunSummaries streams the run summaries of a project and domain.
func (s *Server) StreamRunSummaries(ctx context.Context, req StreamRunSummariesRequestObject) (StreamRunSummariesResponseObject, error) {
	src := sse.Source[*runs.Event]{
		Event: "run",
		Open: func(ctx context.Context, after *uint64) (*journal.Subscription[*runs.Event], journal.Start[*runs.Event], []*runs.Event) {
			sub, start, snap := s.runs.Subscribe(ctx, req.Project, req.Domain, after)
			events := make([]*runs.Event, len(snap))
			for i := range snap {
				events[i] = &runs.Event{Summary: snap[i]}
			}
			return sub, start, events
		},
		Encode:  encodeRunEvent,
		Cursors: s.runs.Cursors(),
	}
	return &stream[*runs.Event]{ctx: ctx, lastID: lastEventID(req.Params.LastEventID, req.Params.LastEventId), src: src, s: s}, nil
}

// actionStream is a stream of the actions of scope that filter matches
// (the zero Filter: all), with the changes that take them out of it.
func (s *Server) actionStream(ctx context.Context, scope taskactions.Scope, filter taskactions.Filter, lastID string) *stream[*taskactions.ActionUpdate] {
	src := sse.Source[*taskactions.ActionUpdate]{
		Event: "action",
		Open: func(ctx context.Context, after *uint64) (*taskactions.Subscription, taskactions.Start, []*taskactions.ActionUpdate) {
			return s.mgr.Subscribe(ctx, scope, after)
		},
		Encode:  encodeActionEvent,
		Cursors: s.mgr.Cache().Journal(),
	}
	if !filter.IsZero() {
		src.Keep = filter.Match
	}
	return &stream[*taskactions.ActionUpdate]{ctx: ctx, lastID: lastID, src: src, s: s}
}

// lastEventID prefers the header (what EventSource sends on reconnect) to
// the query parameter (what a page can put on its first connect).
func lastEventID(header, query *string) string {
	if h := value(header); h != "" {
		return h
	}
	return value(query)
}

// stream is the response of the three stream operations: it writes the
// event stream itself instead of a body.
type stream[V any] struct {
	ctx    context.Context
	lastID string
	src    sse.Source[V]
	s      *Server
}

func (st *stream[V]) serve(w http.ResponseWriter) error {
	if !st.admit(w) {
		return nil
	}
	closed := st.s.metrics.StreamOpened(operationFrom(st.ctx).stream)
	ended, release := st.s.holdSession(st.ctx)
	r := requestFrom(st.ctx)
	return sse.Serve(st.ctx, w, st.src, st.s.sse, sse.Options{
		LastEventID: st.lastID,
		// An HTTP/1.1 stream leaves net/http once synced (sse.detach).
		Detach: r != nil && r.ProtoMajor == 1 && r.ProtoMinor == 1,
		Done:   func() { release(); closed(); st.s.streams.release() },
		End:    ended,
	})
}

// admit takes a stream slot, or answers the request itself (HEAD, or no
// slot left). A function of its own for the frame's sake (see withID).
//
//go:noinline
func (st *stream[V]) admit(w http.ResponseWriter) bool {
	if isHead(st.ctx) {
		sse.WriteHead(w)
		return false
	}
	if !st.s.streams.acquire() {
		w.Header().Set("Retry-After", "5")
		writeProblemCtx(st.ctx, w, errTooManyStreams)
		return false
	}
	return true
}

func (st *stream[V]) VisitStreamActionEventsResponse(w http.ResponseWriter) error { return st.serve(w) }
func (st *stream[V]) VisitStreamRunEventsResponse(w http.ResponseWriter) error    { return st.serve(w) }
func (st *stream[V]) VisitStreamRunSummariesResponse(w http.ResponseWriter) error { return st.serve(w) }

func notFound(what string) error {
	return &notFoundError{what}
}

type notFoundError struct{ what string }

func (e *notFoundError) Error() string { return e.what + " not found" }
func (e *notFoundError) Unwrap() error { return taskactions.ErrNotFound }

type headKey struct{}

// markHead notes a HEAD request in its context, for handlers whose answer
// is not a body net/http can drop (a stream, which would never end).
func markHead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.WithContext(context.WithValue(r.Context(), headKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

type requestKey struct{}

// keepRequest puts the request in its context, for the responses that
// need it whole: a log, served by http.ServeContent for its Range
// handling; a logout, which reads the cookie. It is let go when the
// handler returns: a parked stream keeps its context for hours (see
// sse.Parking), and the request would be held with it.
func keepRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kept := &keptRequest{r}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, kept)))
		kept.r = nil
	})
}

type keptRequest struct{ r *http.Request }

// requestFrom is the request of ctx while its handler runs, else nil.
func requestFrom(ctx context.Context) *http.Request {
	if k, ok := ctx.Value(requestKey{}).(*keptRequest); ok {
		return k.r
	}
	return nil
}

func isHead(ctx context.Context) bool {
	head, _ := ctx.Value(headKey{}).(bool)
	return head
}
