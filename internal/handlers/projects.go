package handlers

import (
	"context"
	"encoding/json"
	"net/http"

	"taskactions/internal/auth"
	"taskactions/internal/journal"
	"taskactions/internal/runs"
	"taskactions/internal/sse"
)

// ListProjects lists the projects and domains with runs that the caller
// may read.
func (s *Server) ListProjects(ctx context.Context, _ ListProjectsRequestObject) (ListProjectsResponseObject, error) {
	ps, err := s.runs.Projects(ctx)
	if err != nil {
		return nil, err
	}
	readable := s.readableProjects(ctx)
	items := make([]ProjectDomain, 0, len(ps))
	for _, p := range ps {
		if readable(p) {
			items = append(items, projectOf(p, false))
		}
	}
	return ListProjects200JSONResponse(ProjectList{Items: items}), nil
}

// StreamProjects streams the projects and domains the caller may read.
func (s *Server) StreamProjects(ctx context.Context, req StreamProjectsRequestObject) (StreamProjectsResponseObject, error) {
	readable := s.readableProjects(ctx)
	src := sse.Source[*runs.ProjectEvent]{
		Event: "project",
		Open: func(ctx context.Context, after *uint64) (*journal.Subscription[*runs.ProjectEvent], journal.Start[*runs.ProjectEvent], []*runs.ProjectEvent) {
			sub, start, snap := s.runs.SubscribeProjects(ctx, after)
			events := make([]*runs.ProjectEvent, len(snap))
			for i := range snap {
				events[i] = &runs.ProjectEvent{Project: snap[i]}
			}
			return sub, start, events
		},
		Encode: func(e *runs.ProjectEvent) []byte {
			return e.Wire.Bytes(func() []byte {
				b, _ := json.Marshal(projectOf(e.Project, e.Deleted))
				return b
			})
		},
		Keep:    func(e *runs.ProjectEvent) bool { return readable(e.Project) },
		Cursors: s.runs.ProjectCursors(),
	}
	return &stream[*runs.ProjectEvent]{ctx: ctx, lastID: lastEventID(req.Params.LastEventID, req.Params.LastEventId), src: src, s: s}, nil
}

func (st *stream[V]) VisitStreamProjectsResponse(w http.ResponseWriter) error { return st.serve(w) }

// readableProjects answers whether the caller may read the runs of a
// project and domain, by the operations table's listRuns, remembering each answer
// for the request (or the stream).
func (s *Server) readableProjects(ctx context.Context) func(runs.Project) bool {
	subject := auth.SubjectFrom(ctx)
	known := map[[2]string]bool{}
	return func(p runs.Project) bool {
		k := [2]string{p.Project, p.Domain}
		ok, seen := known[k]
		if !seen {
			rl := operations["listRuns"]
			ok = subject != nil && s.authz.Authorize(ctx, subject, auth.Attributes{Verb: rl.verb, Project: p.Project, Domain: p.Domain, Kube: rl.kube}) == nil
			known[k] = ok
		}
		return ok
	}
}

func projectOf(p runs.Project, deleted bool) ProjectDomain {
	out := ProjectDomain{Project: p.Project, Domain: p.Domain, RunCount: p.Runs, LastActivity: p.LastActivity}
	if deleted {
		out.Deleted = &deleted
	}
	return out
}
