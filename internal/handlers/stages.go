package handlers

import (
	"context"
	"net/http"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/sse"
)

// The Stage operations: each translates HTTP to a call of the Stage
// manager. Stages are Kubernetes objects and are served as such.

// ListStages lists a project's Stages, sorted by name.
func (s *Server) ListStages(ctx context.Context, req ListStagesRequestObject) (ListStagesResponseObject, error) {
	us, err := s.stages.List(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	return stageList(us), nil
}

// GetStage returns one Stage.
func (s *Server) GetStage(ctx context.Context, req GetStageRequestObject) (GetStageResponseObject, error) {
	u, err := s.stages.Get(ctx, req.Project, req.Stage)
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusOK}, nil
}

// CreateStage creates a Stage from a JSON or YAML body.
func (s *Server) CreateStage(ctx context.Context, req CreateStageRequestObject) (CreateStageResponseObject, error) {
	st, err := objectBody("Stage", req.JSONBody)
	if err != nil {
		return nil, err
	}
	u, err := s.stages.Create(ctx, req.Project, st)
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusCreated}, nil
}

// ReplaceStage replaces a Stage, from the resource version in the body.
func (s *Server) ReplaceStage(ctx context.Context, req ReplaceStageRequestObject) (ReplaceStageResponseObject, error) {
	st, err := objectBody("Stage", req.JSONBody)
	if err != nil {
		return nil, err
	}
	u, err := s.stages.Replace(ctx, req.Project, req.Stage, st)
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusOK}, nil
}

// DeleteStage deletes a Stage.
func (s *Server) DeleteStage(ctx context.Context, req DeleteStageRequestObject) (DeleteStageResponseObject, error) {
	if err := s.stages.Delete(ctx, req.Project, req.Stage); err != nil {
		return nil, err
	}
	return DeleteStage204Response{}, nil
}

// RefreshStage asks for a reconciliation, and with wait=true waits for it.
func (s *Server) RefreshStage(ctx context.Context, req RefreshStageRequestObject) (RefreshStageResponseObject, error) {
	u, err := s.stages.Refresh(ctx, req.Project, req.Stage, value(req.Params.Wait))
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusOK}, nil
}

// ReverifyStage asks for the current Freight to be verified again.
func (s *Server) ReverifyStage(ctx context.Context, req ReverifyStageRequestObject) (ReverifyStageResponseObject, error) {
	u, err := s.stages.Reverify(ctx, req.Project, req.Stage, actor(ctx))
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusOK}, nil
}

// AbortStageVerification asks for the running verification to stop.
func (s *Server) AbortStageVerification(ctx context.Context, req AbortStageVerificationRequestObject) (AbortStageVerificationResponseObject, error) {
	u, err := s.stages.AbortVerification(ctx, req.Project, req.Stage, actor(ctx))
	if err != nil {
		return nil, err
	}
	return objectResponse{stageJSON(u), http.StatusOK}, nil
}

// StreamProjectStages streams a project's Stages.
func (s *Server) StreamProjectStages(ctx context.Context, req StreamProjectStagesRequestObject) (StreamProjectStagesResponseObject, error) {
	return s.stageStream(ctx, req.Project, "", lastEventID(req.Params.LastEventID, req.Params.LastEventId))
}

// StreamStage streams one Stage.
func (s *Server) StreamStage(ctx context.Context, req StreamStageRequestObject) (StreamStageResponseObject, error) {
	return s.stageStream(ctx, req.Project, req.Stage, lastEventID(req.Params.LastEventID, req.Params.LastEventId))
}

func (s *Server) stageStream(ctx context.Context, project, name, lastID string) (*stream[*stages.Update], error) {
	// The project is checked before the stream opens, so that a bad one is
	// a problem response, not a stream that ends at once.
	if err := s.stages.CheckProject(ctx, project); err != nil {
		return nil, err
	}
	src := sse.Source[*stages.Update]{
		Event: "stage",
		Open: func(ctx context.Context, after *uint64) (*stages.Subscription, stages.Start, []*stages.Update) {
			return s.stages.Subscribe(ctx, project, name, after)
		},
		Encode:  objectEvent[*kargoapi.Stage],
		Cursors: s.stages.Journal(),
	}
	return &stream[*stages.Update]{ctx: ctx, lastID: lastID, src: src, s: s}, nil
}

func (st *stream[V]) VisitStreamProjectStagesResponse(w http.ResponseWriter) error {
	return st.serve(w)
}
func (st *stream[V]) VisitStreamStageResponse(w http.ResponseWriter) error { return st.serve(w) }

// stageJSON is a Stage's JSON, encoded once.
var stageJSON = objectJSON[*kargoapi.Stage]

// stageList is a 200 StageList written from the memoized encodings.
type stageList []*stages.Update

func (l stageList) VisitListStagesResponse(w http.ResponseWriter) error {
	return writeItems(w, l, stageJSON)
}

func (r objectResponse) VisitGetStageResponse(w http.ResponseWriter) error      { return r.write(w) }
func (r objectResponse) VisitCreateStageResponse(w http.ResponseWriter) error   { return r.write(w) }
func (r objectResponse) VisitReplaceStageResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r objectResponse) VisitRefreshStageResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r objectResponse) VisitReverifyStageResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitAbortStageVerificationResponse(w http.ResponseWriter) error {
	return r.write(w)
}
