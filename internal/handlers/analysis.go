package handlers

import (
	"context"
	"net/http"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/pipeline"
	"taskactions/internal/sse"
)

// The operations of Argo Rollouts' analysis kinds: each translates HTTP to
// a call of the kind's resources.Objects, as the Warehouse operations do.
// ClusterAnalysisTemplates belong to no project: their calls name none
// ("").

// ListAnalysisTemplates lists a project's AnalysisTemplates, sorted by name.
func (s *Server) ListAnalysisTemplates(ctx context.Context, req ListAnalysisTemplatesRequestObject) (ListAnalysisTemplatesResponseObject, error) {
	vs, err := s.analysis.Templates.List(ctx, req.Project)
	return analysisList[*rolloutsapi.AnalysisTemplate](vs), err
}

// GetAnalysisTemplate returns one AnalysisTemplate.
func (s *Server) GetAnalysisTemplate(ctx context.Context, req GetAnalysisTemplateRequestObject) (GetAnalysisTemplateResponseObject, error) {
	return analysisObject(s.analysis.Templates.Get(ctx, req.Project, req.AnalysisTemplate))
}

// CreateAnalysisTemplate creates an AnalysisTemplate from a JSON or YAML body.
func (s *Server) CreateAnalysisTemplate(ctx context.Context, req CreateAnalysisTemplateRequestObject) (CreateAnalysisTemplateResponseObject, error) {
	t, err := objectBody("AnalysisTemplate", req.JSONBody)
	if err != nil {
		return nil, err
	}
	return analysisCreated(s.analysis.Templates.Create(ctx, req.Project, t))
}

// ReplaceAnalysisTemplate replaces an AnalysisTemplate, from the resource version in the body.
func (s *Server) ReplaceAnalysisTemplate(ctx context.Context, req ReplaceAnalysisTemplateRequestObject) (ReplaceAnalysisTemplateResponseObject, error) {
	t, err := objectBody("AnalysisTemplate", req.JSONBody)
	if err != nil {
		return nil, err
	}
	return analysisObject(s.analysis.Templates.Replace(ctx, req.Project, req.AnalysisTemplate, t))
}

// DeleteAnalysisTemplate deletes an AnalysisTemplate.
func (s *Server) DeleteAnalysisTemplate(ctx context.Context, req DeleteAnalysisTemplateRequestObject) (DeleteAnalysisTemplateResponseObject, error) {
	if err := s.analysis.Templates.Delete(ctx, req.Project, req.AnalysisTemplate); err != nil {
		return nil, err
	}
	return DeleteAnalysisTemplate204Response{}, nil
}

// ListClusterAnalysisTemplates lists every ClusterAnalysisTemplate, sorted by name.
func (s *Server) ListClusterAnalysisTemplates(ctx context.Context, _ ListClusterAnalysisTemplatesRequestObject) (ListClusterAnalysisTemplatesResponseObject, error) {
	vs, err := s.analysis.ClusterTemplates.List(ctx, "")
	return analysisList[*rolloutsapi.ClusterAnalysisTemplate](vs), err
}

// GetClusterAnalysisTemplate returns one ClusterAnalysisTemplate.
func (s *Server) GetClusterAnalysisTemplate(ctx context.Context, req GetClusterAnalysisTemplateRequestObject) (GetClusterAnalysisTemplateResponseObject, error) {
	return analysisObject(s.analysis.ClusterTemplates.Get(ctx, "", req.ClusterAnalysisTemplate))
}

// CreateClusterAnalysisTemplate creates a ClusterAnalysisTemplate.
func (s *Server) CreateClusterAnalysisTemplate(ctx context.Context, req CreateClusterAnalysisTemplateRequestObject) (CreateClusterAnalysisTemplateResponseObject, error) {
	t, err := objectBody("ClusterAnalysisTemplate", req.JSONBody)
	if err != nil {
		return nil, err
	}
	return analysisCreated(s.analysis.ClusterTemplates.Create(ctx, "", t))
}

// ReplaceClusterAnalysisTemplate replaces a ClusterAnalysisTemplate.
func (s *Server) ReplaceClusterAnalysisTemplate(ctx context.Context, req ReplaceClusterAnalysisTemplateRequestObject) (ReplaceClusterAnalysisTemplateResponseObject, error) {
	t, err := objectBody("ClusterAnalysisTemplate", req.JSONBody)
	if err != nil {
		return nil, err
	}
	return analysisObject(s.analysis.ClusterTemplates.Replace(ctx, "", req.ClusterAnalysisTemplate, t))
}

// DeleteClusterAnalysisTemplate deletes a ClusterAnalysisTemplate.
func (s *Server) DeleteClusterAnalysisTemplate(ctx context.Context, req DeleteClusterAnalysisTemplateRequestObject) (DeleteClusterAnalysisTemplateResponseObject, error) {
	if err := s.analysis.ClusterTemplates.Delete(ctx, "", req.ClusterAnalysisTemplate); err != nil {
		return nil, err
	}
	return DeleteClusterAnalysisTemplate204Response{}, nil
}

// ListAnalysisRuns lists a project's AnalysisRuns, sorted by name.
func (s *Server) ListAnalysisRuns(ctx context.Context, req ListAnalysisRunsRequestObject) (ListAnalysisRunsResponseObject, error) {
	vs, err := s.analysis.Runs.List(ctx, req.Project)
	return analysisList[*rolloutsapi.AnalysisRun](vs), err
}

// GetAnalysisRun returns one AnalysisRun.
func (s *Server) GetAnalysisRun(ctx context.Context, req GetAnalysisRunRequestObject) (GetAnalysisRunResponseObject, error) {
	return analysisObject(s.analysis.Runs.Get(ctx, req.Project, req.AnalysisRun))
}

// CreateAnalysisRun creates an AnalysisRun by hand.
func (s *Server) CreateAnalysisRun(ctx context.Context, req CreateAnalysisRunRequestObject) (CreateAnalysisRunResponseObject, error) {
	r, err := objectBody("AnalysisRun", req.JSONBody)
	if err != nil {
		return nil, err
	}
	return analysisCreated(s.analysis.Runs.Create(ctx, req.Project, r))
}

// DeleteAnalysisRun deletes an AnalysisRun.
func (s *Server) DeleteAnalysisRun(ctx context.Context, req DeleteAnalysisRunRequestObject) (DeleteAnalysisRunResponseObject, error) {
	if err := s.analysis.Runs.Delete(ctx, req.Project, req.AnalysisRun); err != nil {
		return nil, err
	}
	return DeleteAnalysisRun204Response{}, nil
}

// StreamProjectAnalysisRuns streams a project's AnalysisRuns.
func (s *Server) StreamProjectAnalysisRuns(ctx context.Context, req StreamProjectAnalysisRunsRequestObject) (StreamProjectAnalysisRunsResponseObject, error) {
	// The project is checked before the stream opens (see stageStream).
	runs := s.analysis.Runs
	if err := runs.CheckProject(ctx, req.Project); err != nil {
		return nil, err
	}
	type view = *resources.View[*rolloutsapi.AnalysisRun]
	src := sse.Source[view]{
		Event: "analysisrun",
		Open: func(ctx context.Context, after *uint64) (*resources.Subscription[*rolloutsapi.AnalysisRun], resources.Start[*rolloutsapi.AnalysisRun], []view) {
			return runs.Subscribe(ctx, req.Project, after)
		},
		Encode:  objectEvent[*rolloutsapi.AnalysisRun],
		Cursors: runs.Journal(),
	}
	lastID := lastEventID(req.Params.LastEventID, req.Params.LastEventId)
	return &stream[view]{ctx: ctx, lastID: lastID, src: src, s: s}, nil
}

func (st *stream[V]) VisitStreamProjectAnalysisRunsResponse(w http.ResponseWriter) error {
	return st.serve(w)
}

// analysisObject answers 200 with an object's memoized JSON, or the error.
func analysisObject[T pipeline.Object](v *pipeline.ObjectView[T], err error) (objectResponse, error) {
	if err != nil {
		return objectResponse{}, err
	}
	return objectResponse{objectJSON(v), http.StatusOK}, nil
}

// analysisCreated answers 201 with a new object's JSON, or the error.
func analysisCreated[T pipeline.Object](v *pipeline.ObjectView[T], err error) (objectResponse, error) {
	r, err := analysisObject(v, err)
	r.status = http.StatusCreated
	return r, err
}

// analysisList is a 200 list of one analysis kind, written from the
// memoized encodings.
type analysisList[T pipeline.Object] []*pipeline.ObjectView[T]

func (l analysisList[T]) VisitListAnalysisTemplatesResponse(w http.ResponseWriter) error {
	return writeItems(w, l, objectJSON[T])
}
func (l analysisList[T]) VisitListClusterAnalysisTemplatesResponse(w http.ResponseWriter) error {
	return writeItems(w, l, objectJSON[T])
}
func (l analysisList[T]) VisitListAnalysisRunsResponse(w http.ResponseWriter) error {
	return writeItems(w, l, objectJSON[T])
}

func (r objectResponse) VisitGetAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitCreateAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitReplaceAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitGetClusterAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitCreateClusterAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitReplaceClusterAnalysisTemplateResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r objectResponse) VisitGetAnalysisRunResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitCreateAnalysisRunResponse(w http.ResponseWriter) error {
	return r.write(w)
}
