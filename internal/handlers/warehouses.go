package handlers

import (
	"context"
	"net/http"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/warehouses"
	"taskactions/internal/sse"
)

// The Warehouse operations: each translates HTTP to a call of the
// Warehouse manager, as the Stage operations do.

// ListWarehouses lists a project's Warehouses, sorted by name.
func (s *Server) ListWarehouses(ctx context.Context, req ListWarehousesRequestObject) (ListWarehousesResponseObject, error) {
	vs, err := s.warehouses.List(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	return warehouseList(vs), nil
}

// GetWarehouse returns one Warehouse.
func (s *Server) GetWarehouse(ctx context.Context, req GetWarehouseRequestObject) (GetWarehouseResponseObject, error) {
	v, err := s.warehouses.Get(ctx, req.Project, req.Warehouse)
	if err != nil {
		return nil, err
	}
	return objectResponse{warehouseJSON(v), http.StatusOK}, nil
}

// CreateWarehouse creates a Warehouse from a JSON or YAML body.
func (s *Server) CreateWarehouse(ctx context.Context, req CreateWarehouseRequestObject) (CreateWarehouseResponseObject, error) {
	w, err := objectBody("Warehouse", req.JSONBody)
	if err != nil {
		return nil, err
	}
	v, err := s.warehouses.Create(ctx, req.Project, w)
	if err != nil {
		return nil, err
	}
	return objectResponse{warehouseJSON(v), http.StatusCreated}, nil
}

// ReplaceWarehouse replaces a Warehouse, from the resource version in the body.
func (s *Server) ReplaceWarehouse(ctx context.Context, req ReplaceWarehouseRequestObject) (ReplaceWarehouseResponseObject, error) {
	w, err := objectBody("Warehouse", req.JSONBody)
	if err != nil {
		return nil, err
	}
	v, err := s.warehouses.Replace(ctx, req.Project, req.Warehouse, w)
	if err != nil {
		return nil, err
	}
	return objectResponse{warehouseJSON(v), http.StatusOK}, nil
}

// DeleteWarehouse deletes a Warehouse.
func (s *Server) DeleteWarehouse(ctx context.Context, req DeleteWarehouseRequestObject) (DeleteWarehouseResponseObject, error) {
	if err := s.warehouses.Delete(ctx, req.Project, req.Warehouse); err != nil {
		return nil, err
	}
	return DeleteWarehouse204Response{}, nil
}

// RefreshWarehouse asks for a discovery, and with wait=true waits for it.
func (s *Server) RefreshWarehouse(ctx context.Context, req RefreshWarehouseRequestObject) (RefreshWarehouseResponseObject, error) {
	v, err := s.warehouses.Refresh(ctx, req.Project, req.Warehouse, value(req.Params.Wait))
	if err != nil {
		return nil, err
	}
	return objectResponse{warehouseJSON(v), http.StatusOK}, nil
}

// StreamProjectWarehouses streams a project's Warehouses.
func (s *Server) StreamProjectWarehouses(ctx context.Context, req StreamProjectWarehousesRequestObject) (StreamProjectWarehousesResponseObject, error) {
	// The project is checked before the stream opens (see stageStream).
	if err := s.warehouses.CheckProject(ctx, req.Project); err != nil {
		return nil, err
	}
	src := sse.Source[*warehouses.View]{
		Event: "warehouse",
		Open: func(ctx context.Context, after *uint64) (*warehouses.Subscription, warehouses.Start, []*warehouses.View) {
			return s.warehouses.Subscribe(ctx, req.Project, "", after)
		},
		Encode:  objectEvent[*kargoapi.Warehouse],
		Cursors: s.warehouses.Journal(),
	}
	lastID := lastEventID(req.Params.LastEventID, req.Params.LastEventId)
	return &stream[*warehouses.View]{ctx: ctx, lastID: lastID, src: src, s: s}, nil
}

func (st *stream[V]) VisitStreamProjectWarehousesResponse(w http.ResponseWriter) error {
	return st.serve(w)
}

// warehouseJSON is a Warehouse's JSON, encoded once.
var warehouseJSON = objectJSON[*kargoapi.Warehouse]

// warehouseList is a 200 WarehouseList written from the memoized encodings.
type warehouseList []*warehouses.View

func (l warehouseList) VisitListWarehousesResponse(w http.ResponseWriter) error {
	return writeItems(w, l, warehouseJSON)
}

func (r objectResponse) VisitGetWarehouseResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r objectResponse) VisitCreateWarehouseResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r objectResponse) VisitReplaceWarehouseResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitRefreshWarehouseResponse(w http.ResponseWriter) error { return r.write(w) }
