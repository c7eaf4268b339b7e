package rules

import (
	"strings"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// ComparePromotionPhase orders Promotion phases as Kargo's queue does
// (v1.6.4 internal/api/promotion.go): Running first, then the other
// non-terminal phases (Pending, or none yet), then the terminal ones. It
// returns a negative value when a comes first, a positive one when b
// does, and 0 when they rank equally.
func ComparePromotionPhase(a, b kargoapi.PromotionPhase) int {
	aRunning, bRunning := a == kargoapi.PromotionPhaseRunning, b == kargoapi.PromotionPhaseRunning
	aTerminal, bTerminal := a.IsTerminal(), b.IsTerminal()
	switch {
	case aRunning && !bRunning:
		return -1
	case !aRunning && bRunning:
		return 1
	case !aTerminal && bTerminal:
		return -1
	case aTerminal && !bTerminal:
		return 1
	default:
		return 0
	}
}

// ComparePromotionByPhaseAndCreationTime is Kargo's order of a Stage's
// Promotions, for slices.SortFunc: Running ones first, then the other
// non-terminal ones by name ascending (the ULID in a generated name orders
// them by creation, so the one enqueued first leads), then the terminal
// ones by name descending (most recent first).
func ComparePromotionByPhaseAndCreationTime(a, b *kargoapi.Promotion) int {
	if c := ComparePromotionPhase(a.Status.Phase, b.Status.Phase); c != 0 {
		return c
	}
	if !a.Status.Phase.IsTerminal() {
		return strings.Compare(a.Name, b.Name)
	}
	return strings.Compare(b.Name, a.Name)
}

// NextPromotion returns the Promotion a Stage runs next among its
// Promotions promos: the Running one (the first in
// ComparePromotionByPhaseAndCreationTime order if several are), else the
// first non-terminal one in that order (Pending, or not yet given a
// phase), else nil. It does not hold the queue for a verification: the
// Stage's status.currentPromotion, which ReconcileWithPromotions sets, is
// what a Promotion runner should follow.
func NextPromotion(promos []*kargoapi.Promotion) *kargoapi.Promotion {
	var next *kargoapi.Promotion
	for _, p := range promos {
		if p == nil || p.Status.Phase.IsTerminal() {
			continue
		}
		if next == nil || ComparePromotionByPhaseAndCreationTime(p, next) < 0 {
			next = p
		}
	}
	return next
}
