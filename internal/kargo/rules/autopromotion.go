package rules

import (
	"cmp"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// AutoPromotion is a Promotion the Stage controller creates with no one
// asking: Freight from one of the Stage's requested origins.
type AutoPromotion struct {
	Origin  string // as Kargo writes an origin: "Warehouse/w"
	Freight string // the Freight's name
}

// AutoPromotionPlan is what AutoPromotions decides for a Stage.
type AutoPromotionPlan struct {
	Promote []AutoPromotion
	// Recheck, when not zero, is how soon Freight now soaking in an
	// upstream Stage will have soaked: no event marks that moment, so the
	// controller looks again then.
	Recheck time.Duration
}

// AutoPromotions is Kargo v1.6.3's auto-promotion of a Stage
// (internal/controller/stages/regular_stages.go autoPromoteFreight), given
// the project's ProjectConfig (nil: none), the project's Freight and the
// Stage's Promotions. When the config allows it (AutoPromotionAllowed),
// then for each requested origin, the newest Freight of that origin
// available to the Stage (Stage.IsFreightAvailable: from the Warehouse
// directly, verified and soaked upstream, or approved) is promoted, unless
// it is the Stage's current Freight of that origin or a Promotion of it to
// the Stage exists, whatever its phase. Newest is the latest creation
// time, ties to the first name (the order of the project's Freight list).
// A control-flow Stage is never auto-promoted: Kargo's control-flow
// reconciler does not, and it has no steps to run.
func AutoPromotions(s *kargoapi.Stage, cfg *kargoapi.ProjectConfig, freight []*kargoapi.Freight, promos []*kargoapi.Promotion) (AutoPromotionPlan, error) {
	if s.IsControlFlow() {
		return AutoPromotionPlan{}, nil
	}
	allowed, err := AutoPromotionAllowed(cfg, s)
	if err != nil || !allowed {
		return AutoPromotionPlan{}, err
	}
	var plan AutoPromotionPlan
	cur := s.Status.FreightHistory.Current()
	for _, req := range s.Spec.RequestedFreight {
		plan.Recheck = sooner(plan.Recheck, soaking(s, req, freight))
		newest := newestAvailable(s, req.Origin, freight)
		if newest == nil || isCurrent(cur, req.Origin, newest.Name) || promoted(promos, s, newest.Name) {
			continue
		}
		plan.Promote = append(plan.Promote, AutoPromotion{Origin: req.Origin.String(), Freight: newest.Name})
	}
	return plan, nil
}

// AutoPromotionAllowed is Kargo v1.6.3's autoPromotionAllowed: the first
// promotion policy of the config (nil: none) that selects the Stage
// decides, by its autoPromotionEnabled; when none does, it is not
// allowed. A policy selects by stageSelector (a name, exact or a pattern,
// and a label selector; both when both are given; an empty selector
// selects every Stage) or, in older configs, by stage, an exact name. A
// pattern or label selector that does not parse is an error.
func AutoPromotionAllowed(cfg *kargoapi.ProjectConfig, s *kargoapi.Stage) (bool, error) {
	if cfg == nil {
		return false, nil
	}
	for _, p := range cfg.Spec.PromotionPolicies {
		ok, err := selects(p, s)
		if err != nil {
			return false, err
		}
		if ok {
			return p.AutoPromotionEnabled, nil
		}
	}
	return false, nil
}

// selects reports whether a promotion policy applies to s.
func selects(p kargoapi.PromotionPolicy, s *kargoapi.Stage) (bool, error) {
	sel := p.StageSelector
	if sel == nil {
		sel = &kargoapi.PromotionPolicySelector{Name: p.Stage} // nolint:staticcheck // older configs
	}
	if sel.Name != "" {
		m, err := parseNamePattern(sel.Name)
		if err != nil {
			return false, fmt.Errorf("error parsing PromotionPolicy name pattern %q: %w", sel.Name, err)
		}
		if !m.match(s.Name) {
			return false, nil
		}
	}
	if sel.LabelSelector != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("error parsing PromotionPolicy label selector %q: %w", sel.LabelSelector, err)
		}
		if !ls.Matches(labels.Set(s.Labels)) {
			return false, nil
		}
	}
	return true, nil
}

// newestAvailable is the newest Freight of origin available to s, or nil.
func newestAvailable(s *kargoapi.Stage, origin kargoapi.FreightOrigin, freight []*kargoapi.Freight) *kargoapi.Freight {
	var newest *kargoapi.Freight
	for _, f := range freight {
		if !f.Origin.Equals(&origin) || !s.IsFreightAvailable(f) {
			continue
		}
		if newest == nil || cmp.Or(f.CreationTimestamp.Compare(newest.CreationTimestamp.Time), cmp.Compare(newest.Name, f.Name)) > 0 {
			newest = f
		}
	}
	return newest
}

// isCurrent: the Stage's current Freight of origin is the named one.
func isCurrent(cur *kargoapi.FreightCollection, origin kargoapi.FreightOrigin, name string) bool {
	if cur == nil {
		return false
	}
	ref, ok := cur.Freight[origin.String()]
	return ok && ref.Name == name
}

// promoted: a Promotion of the named Freight to s exists.
func promoted(promos []*kargoapi.Promotion, s *kargoapi.Stage, freight string) bool {
	for _, p := range promos {
		if p.Namespace == s.Namespace && p.Spec.Stage == s.Name && p.Spec.Freight == freight {
			return true
		}
	}
	return false
}

// soaking is how soon Freight of req's origin that is verified in, and
// still in, an upstream Stage of req will have soaked there for
// requiredSoakTime; zero when none is soaking.
func soaking(s *kargoapi.Stage, req kargoapi.FreightRequest, freight []*kargoapi.Freight) time.Duration {
	soak := req.Sources.RequiredSoakTime
	if req.Sources.Direct || soak == nil {
		return 0
	}
	var next time.Duration
	for _, f := range freight {
		if !f.Origin.Equals(&req.Origin) || s.IsFreightAvailable(f) {
			continue
		}
		for _, up := range req.Sources.Stages {
			if f.IsVerifiedIn(up) && f.IsCurrentlyIn(up) {
				next = sooner(next, soak.Duration-f.GetLongestSoak(up))
			}
		}
	}
	return next
}

// sooner is the smaller of two durations that are set (positive).
func sooner(a, b time.Duration) time.Duration {
	switch {
	case b <= 0:
		return a
	case a <= 0:
		return b
	}
	return min(a, b)
}
