package verification

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// AnalysisRuns is what verifications read and write of AnalysisRuns.
type AnalysisRuns interface {
	// Latest is the newest AnalysisRun labelled for the Stage and the
	// Freight collection, nil when there is none (Kargo's
	// findExistingAnalysisRun).
	Latest(ctx context.Context, project, stage, freightCollection string) (*rolloutsapi.AnalysisRun, error)
	// Run reads one; pipeline.ErrNotFound when there is none.
	Run(ctx context.Context, project, name string) (*rolloutsapi.AnalysisRun, error)
	CreateRun(ctx context.Context, run *rolloutsapi.AnalysisRun) (*rolloutsapi.AnalysisRun, error)
	// Terminate asks the run to stop (spec.terminate).
	Terminate(ctx context.Context, project, name string) error
}

// Freight reads a project's Freight by name: nil, nil when there is none.
type Freight func(ctx context.Context, project, name string) (*kargoapi.Freight, error)

// Config holds a Verifiers' dependencies.
type Config struct {
	Runs      AnalysisRuns
	Templates Templates
	Freight   Freight
	// Warehouses are what Kargo's freight functions look origins up in;
	// nil: the Freight's own origins (engine.Finder).
	Warehouses engine.Warehouses
	Now        func() time.Time // time.Now when nil
}

// Verifiers make the rules' Verifier for one reconciliation.
type Verifiers struct{ cfg Config }

// New returns Verifiers over cfg.
func New(cfg Config) *Verifiers {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifiers{cfg: cfg}
}

// For is the Verifier of one reconciliation, its calls bound to ctx.
func (v *Verifiers) For(ctx context.Context) rules.Verifier { return &verifier{ctx: ctx, cfg: v.cfg} }

type verifier struct {
	ctx context.Context
	cfg Config
}

func (v *verifier) now() *metav1.Time {
	t := metav1.NewTime(v.cfg.Now().Truncate(time.Second))
	return &t
}

// Start is Kargo's startVerification.
func (v *verifier) Start(s *kargoapi.Stage, fc kargoapi.FreightCollection, req *kargoapi.VerificationRequest, vi kargoapi.VerificationInfo) kargoapi.VerificationInfo {
	fail := func(err error) kargoapi.VerificationInfo {
		vi.FinishTime, vi.Phase, vi.Message = v.now(), kargoapi.VerificationPhaseError, err.Error()
		return vi
	}
	if req == nil {
		existing, err := v.cfg.Runs.Latest(v.ctx, s.Namespace, s.Name, fc.ID)
		if err != nil {
			return fail(err)
		}
		if existing != nil {
			vi.FinishTime = completedAt(&existing.Status)
			vi.Phase = kargoapi.VerificationPhase(existing.Status.Phase)
			vi.AnalysisRun = reference(existing)
			return vi
		}
	}
	r := request{stage: s, freight: fc, functions: engine.FreightFunctions(v.scope(s, fc))}
	cur := fc.VerificationHistory.Current()
	if cur == nil || (req.ForID(cur.ID) && req.ControlPlane && req.Actor != "") {
		if s.Status.LastPromotion != nil {
			r.promotion = s.Status.LastPromotion.Name
		}
	}
	owners, err := v.owners(s.Namespace, fc)
	if err == nil {
		r.owners = owners
	}
	var ar *rolloutsapi.AnalysisRun
	if err == nil {
		ar, err = build(v.ctx, v.cfg.Templates, r)
	}
	if err != nil {
		return fail(fmt.Errorf("error building AnalysisRun for Stage %q and Freight collection %q in namespace %q: %w", s.Name, fc.ID, s.Namespace, err))
	}
	created, err := v.cfg.Runs.CreateRun(v.ctx, ar)
	if err != nil {
		return fail(fmt.Errorf("error creating AnalysisRun %q in namespace %q: %w", ar.Name, ar.Namespace, err))
	}
	vi.FinishTime = created.CreationTimestamp.DeepCopy()
	vi.Phase = kargoapi.VerificationPhasePending
	vi.AnalysisRun = reference(created)
	return vi
}

// Result is Kargo's getVerificationResult.
func (v *verifier) Result(fc kargoapi.FreightCollection) *kargoapi.VerificationInfo {
	cur := fc.VerificationHistory.Current()
	if cur == nil || cur.AnalysisRun == nil {
		return nil // Kargo errors and retries: nothing here will change that
	}
	ar, err := v.cfg.Runs.Run(v.ctx, cur.AnalysisRun.Namespace, cur.AnalysisRun.Name)
	if err != nil {
		if !errors.Is(err, pipeline.ErrNotFound) {
			return nil // a read that failed: try again on the next pass
		}
		vi := cur.DeepCopy()
		vi.Phase = kargoapi.VerificationPhaseError
		vi.Message = fmt.Sprintf("error getting AnalysisRun %q in namespace %q: %v", cur.AnalysisRun.Name, cur.AnalysisRun.Namespace, err)
		return vi
	}
	return &kargoapi.VerificationInfo{
		ID: cur.ID, Actor: cur.Actor, StartTime: cur.StartTime,
		FinishTime: completedAt(&ar.Status), Phase: kargoapi.VerificationPhase(ar.Status.Phase),
		Message: ar.Status.Message, AnalysisRun: reference(ar),
	}
}

// Abort is Kargo's abortVerification: the run is terminated and the
// verification recorded Failed (the run itself ends Successful, as
// Rollouts ends a terminated run, which is why its phase is not taken).
func (v *verifier) Abort(fc kargoapi.FreightCollection, req *kargoapi.VerificationRequest) *kargoapi.VerificationInfo {
	cur := fc.VerificationHistory.Current()
	if cur == nil || cur.AnalysisRun == nil {
		return nil
	}
	if cur.Phase.IsTerminal() {
		return cur.DeepCopy()
	}
	vi := cur.DeepCopy()
	if req.ForID(cur.ID) {
		vi.Actor = req.Actor
	}
	vi.FinishTime, vi.Phase, vi.Message = v.now(), kargoapi.VerificationPhaseFailed, "Verification aborted by user"
	if err := v.cfg.Runs.Terminate(v.ctx, cur.AnalysisRun.Namespace, cur.AnalysisRun.Name); err != nil {
		vi.Phase = kargoapi.VerificationPhaseError
		vi.Message = fmt.Sprintf("error terminating AnalysisRun %q in namespace %q: %v", cur.AnalysisRun.Name, cur.AnalysisRun.Namespace, err)
	}
	return vi
}

// owners are the owner references of the collection's Freight (Kargo's
// WithOwner for each).
func (v *verifier) owners(project string, fc kargoapi.FreightCollection) ([]metav1.OwnerReference, error) {
	var out []metav1.OwnerReference
	for _, ref := range fc.References() {
		f, err := v.cfg.Freight(v.ctx, project, ref.Name)
		if err == nil && f == nil {
			err = fmt.Errorf("freight %q not found", ref.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("build owner references: get Freight %q in namespace %q: %w", ref.Name, project, err)
		}
		no := false
		out = append(out, metav1.OwnerReference{
			APIVersion: kargoapi.GroupVersion.String(), Kind: "Freight", Name: f.Name, UID: f.UID, BlockOwnerDeletion: &no,
		})
	}
	return out, nil
}

// scope is what Kargo's freight functions see: the collection, the
// Stage's requests, and the project's Freight.
func (v *verifier) scope(s *kargoapi.Stage, fc kargoapi.FreightCollection) *engine.FreightScope {
	f := engine.Finder{Project: s.Namespace, Requests: s.Spec.RequestedFreight, Freight: fc.References(), Warehouses: v.cfg.Warehouses}
	return &engine.FreightScope{Ctx: v.ctx, Finder: f, Freight: func(ctx context.Context, name string) (*kargoapi.Freight, error) {
		return v.cfg.Freight(ctx, s.Namespace, name)
	}}
}

func reference(ar *rolloutsapi.AnalysisRun) *kargoapi.AnalysisRunReference {
	return &kargoapi.AnalysisRunReference{Name: ar.Name, Namespace: ar.Namespace, Phase: string(ar.Status.Phase)}
}

// completedAt is when a finished run finished (Kargo's CompletedAt): its
// completedAt, else its last measurement's end; nil while it runs.
func completedAt(st *rolloutsapi.AnalysisRunStatus) *metav1.Time {
	if !st.Phase.Completed() {
		return nil
	}
	if st.CompletedAt != nil {
		return st.CompletedAt.DeepCopy()
	}
	var at *metav1.Time
	for _, mr := range st.MetricResults {
		for _, m := range mr.Measurements {
			if m.FinishedAt != nil && (at == nil || m.FinishedAt.After(at.Time)) {
				at = m.FinishedAt.DeepCopy()
			}
		}
	}
	return at
}
