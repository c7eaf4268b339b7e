package handlers

import (
	"context"
	"net/http"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/auth"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/sse"
)

// The Freight and Promotion operations: each translates HTTP to a call of
// the Freight or the Promotion manager.

// ListFreight lists a project's Freight, newest first.
func (s *Server) ListFreight(ctx context.Context, req ListFreightRequestObject) (ListFreightResponseObject, error) {
	vs, err := s.freight.List(ctx, req.Project, value(req.Params.AvailableTo))
	if err != nil {
		return nil, err
	}
	return freightList(vs), nil
}

// CreateFreight creates Freight from a JSON or YAML body.
func (s *Server) CreateFreight(ctx context.Context, req CreateFreightRequestObject) (CreateFreightResponseObject, error) {
	f, err := objectBody("Freight", req.JSONBody)
	if err != nil {
		return nil, err
	}
	v, err := s.freight.Create(ctx, req.Project, f)
	if err != nil {
		return nil, err
	}
	return objectResponse{freightJSON(v), http.StatusCreated}, nil
}

// GetFreight returns Freight by name or alias.
func (s *Server) GetFreight(ctx context.Context, req GetFreightRequestObject) (GetFreightResponseObject, error) {
	v, err := s.freight.Get(ctx, req.Project, req.Freight)
	if err != nil {
		return nil, err
	}
	return objectResponse{freightJSON(v), http.StatusOK}, nil
}

// ApproveFreight approves Freight for a Stage.
func (s *Server) ApproveFreight(ctx context.Context, req ApproveFreightRequestObject) (ApproveFreightResponseObject, error) {
	v, err := s.freight.Approve(ctx, req.Project, req.Freight, req.Params.Stage)
	if err != nil {
		return nil, err
	}
	return objectResponse{freightJSON(v), http.StatusOK}, nil
}

// ListPromotions lists a project's Promotions.
func (s *Server) ListPromotions(ctx context.Context, req ListPromotionsRequestObject) (ListPromotionsResponseObject, error) {
	vs, err := s.promos.List(ctx, req.Project, "")
	if err != nil {
		return nil, err
	}
	return promotionList{vs, http.StatusOK}, nil
}

// ListStagePromotions lists a Stage's Promotions.
func (s *Server) ListStagePromotions(ctx context.Context, req ListStagePromotionsRequestObject) (ListStagePromotionsResponseObject, error) {
	if _, err := s.stages.Get(ctx, req.Project, req.Stage); err != nil {
		return nil, err
	}
	vs, err := s.promos.List(ctx, req.Project, req.Stage)
	if err != nil {
		return nil, err
	}
	return promotionList{vs, http.StatusOK}, nil
}

// GetPromotion returns one Promotion.
func (s *Server) GetPromotion(ctx context.Context, req GetPromotionRequestObject) (GetPromotionResponseObject, error) {
	v, err := s.promos.Get(ctx, req.Project, req.Promotion)
	if err != nil {
		return nil, err
	}
	return objectResponse{promotionJSON(v), http.StatusOK}, nil
}

// PromoteToStage creates a Promotion.
func (s *Server) PromoteToStage(ctx context.Context, req PromoteToStageRequestObject) (PromoteToStageResponseObject, error) {
	v, err := s.promos.Promote(ctx, req.Project, req.Stage, freightRef(req.Body), actor(ctx))
	if err != nil {
		return nil, err
	}
	return objectResponse{promotionJSON(v), http.StatusCreated}, nil
}

// PromoteDownstream creates the Promotions of every downstream Stage.
func (s *Server) PromoteDownstream(ctx context.Context, req PromoteDownstreamRequestObject) (PromoteDownstreamResponseObject, error) {
	vs, err := s.promos.PromoteDownstream(ctx, req.Project, req.Stage, freightRef(req.Body), actor(ctx))
	if err != nil {
		return nil, err
	}
	return promotionList{vs, http.StatusCreated}, nil
}

// AbortPromotion asks for a Promotion to be aborted.
func (s *Server) AbortPromotion(ctx context.Context, req AbortPromotionRequestObject) (AbortPromotionResponseObject, error) {
	v, err := s.promos.Abort(ctx, req.Project, req.Promotion, actor(ctx))
	if err != nil {
		return nil, err
	}
	return objectResponse{promotionJSON(v), http.StatusOK}, nil
}

// StreamProjectPromotions streams a project's Promotions.
func (s *Server) StreamProjectPromotions(ctx context.Context, req StreamProjectPromotionsRequestObject) (StreamProjectPromotionsResponseObject, error) {
	return s.promotionStream(ctx, req.Project, "", lastEventID(req.Params.LastEventID, req.Params.LastEventId)), nil
}

// StreamStagePromotions streams a Stage's Promotions.
func (s *Server) StreamStagePromotions(ctx context.Context, req StreamStagePromotionsRequestObject) (StreamStagePromotionsResponseObject, error) {
	return s.promotionStream(ctx, req.Project, req.Stage, lastEventID(req.Params.LastEventID, req.Params.LastEventId)), nil
}

func (s *Server) promotionStream(ctx context.Context, project, stage, lastID string) *stream[*promotions.View] {
	src := sse.Source[*promotions.View]{
		Event: "promotion",
		Open: func(ctx context.Context, after *uint64) (*promotions.Subscription, promotions.Start, []*promotions.View) {
			return s.promos.Subscribe(ctx, project, stage, after)
		},
		Encode:  objectEvent[*kargoapi.Promotion],
		Cursors: s.promos.Journal(),
	}
	return &stream[*promotions.View]{ctx: ctx, lastID: lastID, src: src, s: s}
}

func (st *stream[V]) VisitStreamProjectPromotionsResponse(w http.ResponseWriter) error {
	return st.serve(w)
}
func (st *stream[V]) VisitStreamStagePromotionsResponse(w http.ResponseWriter) error {
	return st.serve(w)
}

func freightRef(b *PromoteRequest) promotions.FreightRef {
	return promotions.FreightRef{Name: value(b.Freight), Alias: value(b.FreightAlias)}
}

// actor is who asks, as the create-actor annotation names them.
func actor(ctx context.Context) string {
	if s := auth.SubjectFrom(ctx); s != nil {
		return "subject:" + s.Name
	}
	return ""
}

var (
	freightJSON   = objectJSON[*kargoapi.Freight]
	promotionJSON = objectJSON[*kargoapi.Promotion]
)

type freightList []*freight.View

func (l freightList) VisitListFreightResponse(w http.ResponseWriter) error {
	return writeItems(w, l, freightJSON)
}

// promotionList is a PromotionList (200, or 201 for created ones).
type promotionList struct {
	items  []*promotions.View
	status int
}

func (l promotionList) write(w http.ResponseWriter) error {
	return writeItemsStatus(w, l.status, l.items, promotionJSON)
}
func (l promotionList) VisitListPromotionsResponse(w http.ResponseWriter) error { return l.write(w) }
func (l promotionList) VisitListStagePromotionsResponse(w http.ResponseWriter) error {
	return l.write(w)
}
func (l promotionList) VisitPromoteDownstreamResponse(w http.ResponseWriter) error { return l.write(w) }

func (r objectResponse) VisitCreateFreightResponse(w http.ResponseWriter) error  { return r.write(w) }
func (r objectResponse) VisitGetFreightResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r objectResponse) VisitApproveFreightResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitGetPromotionResponse(w http.ResponseWriter) error   { return r.write(w) }
func (r objectResponse) VisitPromoteToStageResponse(w http.ResponseWriter) error { return r.write(w) }
func (r objectResponse) VisitAbortPromotionResponse(w http.ResponseWriter) error { return r.write(w) }
