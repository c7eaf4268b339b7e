package handlers

import (
	"encoding/json"
	"fmt"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
)

// actionOf is the API view of an action.
func actionOf(a *taskactions.Action) Action {
	out := Action{
		ActionId:         ActionIdentifier{Name: a.ID.Name, Run: RunIdentifier{Project: a.ID.Project, Domain: a.ID.Domain, Name: a.ID.Run}},
		ParentActionName: optional(a.Parent),
		ActionType:       ActionActionType(a.ActionType),
		TaskType:         a.TaskType,
		ShortName:        optional(a.ShortName),
		Group:            optional(a.Group),
		InputUri:         optional(a.InputURI),
		RunOutputBase:    optional(a.RunOutputBase),
		OutputUri:        optional(a.OutputURI),
		Phase:            Phase(a.Phase),
		Attempts:         int64(a.Attempts),
		CacheStatus:      CacheStatus(a.CacheStatus.String()),
		SystemFailures:   int64(a.SystemFailures),
		PluginPhase:      optional(a.PluginPhase),
		PhaseHistory:     make([]PhaseTransition, len(a.PhaseHistory)),
		Conditions:       make([]Condition, len(a.Conditions)),
		AbortReason:      optional(a.AbortReason),
		PendingReason:    optional(a.PendingReason),
		TraceId:          optional(a.TraceID),
		CreatedAt:        a.CreatedAt.UTC(),
		UpdatedAt:        a.UpdatedAt.UTC(),
	}
	for i, h := range a.PhaseHistory {
		out.PhaseHistory[i] = PhaseTransition{Phase: Phase(h.Phase), OccurredAt: h.OccurredAt.UTC(), Message: optional(h.Message)}
	}
	for i, c := range a.Conditions {
		out.Conditions[i] = Condition{
			Type: ConditionType(c.Type), Status: ConditionStatus(c.Status), Reason: c.Reason,
			Message: c.Message, LastTransitionTime: c.LastTransitionTime.UTC(),
		}
	}
	if e := a.ErrorState; e != nil {
		out.ErrorState = &ErrorState{Code: e.Code, Kind: e.Kind, Message: e.Message}
	}
	if t := a.TaskTemplate; t != nil {
		out.TaskTemplate = &TaskTemplateInfo{Encoding: TaskTemplateInfoEncoding(t.Encoding), Size: int64(t.Size)}
	}
	return out
}

func actionOfObject(ta *v1.TaskAction) Action {
	a := taskactions.ViewOf(ta)
	return actionOf(&a)
}

func summaryOf(s *runs.Summary) RunSummary {
	out := RunSummary{
		Run:         RunIdentifier{Project: s.ID.Project, Domain: s.ID.Domain, Name: s.ID.Run},
		Phase:       Phase(s.Phase),
		ActionCount: int64(s.ActionCount),
		PhaseCounts: make(map[string]int64, len(s.PhaseCounts)),
		StartedAt:   s.StartedAt.UTC(),
	}
	for p, n := range s.PhaseCounts {
		out.PhaseCounts[string(p)] = int64(n)
	}
	if s.EndedAt != nil {
		t := s.EndedAt.UTC()
		out.EndedAt = &t
	}
	return out
}

// encodeRunEvent is the data of a `run` stream event (RunEvent): the
// summary, and whether the run is gone.
func encodeRunEvent(e *runs.Event) []byte {
	return e.Wire.Bytes(func() []byte {
		b, _ := json.Marshal(struct {
			RunSummary
			Deleted bool `json:"deleted"`
		}{summaryOf(&e.Summary), e.Deleted})
		return b
	})
}

// enqueueRequestOf translates the API request for the manager. The schema
// has already been checked.
func enqueueRequestOf(body *EnqueueRequest) (taskactions.EnqueueRequest, error) {
	a := body.Action
	tmpl, err := json.Marshal(a.Task.TaskTemplate)
	if err != nil {
		return taskactions.EnqueueRequest{}, badRequest{err}
	}
	req := taskactions.EnqueueRequest{
		ID:            taskactions.ActionID{Project: a.ActionId.Run.Project, Domain: a.ActionId.Run.Domain, Run: a.ActionId.Run.Name, Name: a.ActionId.Name},
		Parent:        value(a.ParentActionName),
		InputURI:      value(a.InputUri),
		RunOutputBase: value(a.RunOutputBase),
		Group:         value(a.Group),
		TaskType:      a.Task.TaskTemplate.Type,
		TaskTemplate:  tmpl,
		ShortName:     value(a.Task.ShortName),
		CacheKey:      value(a.Task.CacheKey),
	}
	if rs := body.RunSpec; rs != nil {
		req.RunSpec = &taskactions.RunSpec{
			Labels: deref(rs.Labels), Annotations: deref(rs.Annotations), Envs: deref(rs.Envs), Interruptible: rs.Interruptible,
		}
	}
	return req, nil
}

func statusUpdateOf(s ActionStatus) taskactions.StatusUpdate {
	u := taskactions.StatusUpdate{Phase: v1.Phase(s.Phase), Message: value(s.Message)}
	if s.CacheStatus != nil {
		if cs, ok := v1.ParseCacheStatus(string(*s.CacheStatus)); ok {
			u.CacheStatus = &cs
		}
	}
	if e := s.Error; e != nil {
		u.Error = &v1.ErrorState{Code: value(e.Code), Kind: string(e.Kind), Message: value(e.Message)}
	}
	return u
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func value[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func deref(m *StringMap) map[string]string {
	if m == nil {
		return nil
	}
	return *m
}

// runQueryOf is the history query of a run list request.
func runQueryOf(req ListRunsRequestObject) (history.RunQuery, error) {
	q := history.RunQuery{Project: req.Project, Domain: req.Domain, Limit: defaultRunPage}
	p := req.Params
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
	}
	if p.Continue != nil && *p.Continue != "" {
		k, err := history.ParseRunKey(*p.Continue)
		if err != nil {
			return q, fmt.Errorf("continue: %w", err)
		}
		q.After = k
	}
	if p.Phase != nil {
		for _, ph := range *p.Phase {
			q.Phases = append(q.Phases, string(ph))
		}
	}
	if p.StartedAfter != nil {
		q.StartedAfter = *p.StartedAfter
	}
	if p.StartedBefore != nil {
		q.StartedBefore = *p.StartedBefore
	}
	return q, nil
}

// defaultRunPage is a run list's page without a limit.
const defaultRunPage = 100

func pageOf(limit *LimitParam, cont *ContinueParam) taskactions.Page {
	return taskactions.Page{Limit: int(value(limit)), Continue: value(cont)}
}

// filterOf is the filter of a list's or a stream's phase and q.
func filterOf(phases *ActionPhaseParam, q *ActionNameQueryParam) taskactions.Filter {
	f := taskactions.Filter{Name: value(q)}
	if phases != nil {
		for _, p := range *phases {
			f.Phases = append(f.Phases, v1.Phase(p))
		}
	}
	return f
}
