package handlers

import (
	"context"
	"net/http"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// The ProjectConfig operations: a project has one, at
// /projects/{project}/config; each translates HTTP to a call of the
// ProjectConfig manager, as the Warehouse operations do.

// GetProjectConfig returns a project's ProjectConfig.
func (s *Server) GetProjectConfig(ctx context.Context, req GetProjectConfigRequestObject) (GetProjectConfigResponseObject, error) {
	v, err := s.configs.Get(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	return objectResponse{projectConfigJSON(v), http.StatusOK}, nil
}

// PutProjectConfig creates a project's ProjectConfig (201), or replaces it
// from the resource version in the body (200).
func (s *Server) PutProjectConfig(ctx context.Context, req PutProjectConfigRequestObject) (PutProjectConfigResponseObject, error) {
	cfg, err := objectBody("ProjectConfig", req.JSONBody)
	if err != nil {
		return nil, err
	}
	v, created, err := s.configs.Put(ctx, req.Project, cfg)
	if err != nil {
		return nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return objectResponse{projectConfigJSON(v), status}, nil
}

// DeleteProjectConfig deletes a project's ProjectConfig.
func (s *Server) DeleteProjectConfig(ctx context.Context, req DeleteProjectConfigRequestObject) (DeleteProjectConfigResponseObject, error) {
	if err := s.configs.Delete(ctx, req.Project); err != nil {
		return nil, err
	}
	return DeleteProjectConfig204Response{}, nil
}

// projectConfigJSON is a ProjectConfig's JSON, encoded once.
var projectConfigJSON = objectJSON[*kargoapi.ProjectConfig]

func (r objectResponse) VisitGetProjectConfigResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitPutProjectConfigResponse(w http.ResponseWriter) error { return r.write(w) }
