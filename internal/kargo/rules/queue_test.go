package rules

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"taskactions/api/kargo/v1alpha1"
)

func promo(name string, phase v1alpha1.PromotionPhase) *v1alpha1.Promotion {
	return &v1alpha1.Promotion{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kargo-demo"},
		Spec:       v1alpha1.PromotionSpec{Stage: "test", Freight: "f-" + name},
		Status:     v1alpha1.PromotionStatus{Phase: phase},
	}
}

func names(ps []*v1alpha1.Promotion) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestComparePromotionPhase(t *testing.T) {
	cases := []struct {
		a, b v1alpha1.PromotionPhase
		want int
	}{
		{v1alpha1.PromotionPhaseRunning, v1alpha1.PromotionPhaseRunning, 0},
		{v1alpha1.PromotionPhaseRunning, v1alpha1.PromotionPhasePending, -1},
		{v1alpha1.PromotionPhasePending, v1alpha1.PromotionPhaseRunning, 1},
		{"", v1alpha1.PromotionPhasePending, 0},
		{v1alpha1.PromotionPhasePending, v1alpha1.PromotionPhaseSucceeded, -1},
		{v1alpha1.PromotionPhaseAborted, "", 1},
		{v1alpha1.PromotionPhaseFailed, v1alpha1.PromotionPhaseSucceeded, 0},
		{v1alpha1.PromotionPhaseErrored, v1alpha1.PromotionPhaseRunning, 1},
	}
	for _, tc := range cases {
		if got := ComparePromotionPhase(tc.a, tc.b); got != tc.want {
			t.Errorf("ComparePromotionPhase(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestPromotionQueue(t *testing.T) {
	cases := []struct {
		name       string
		promos     []*v1alpha1.Promotion
		wantSorted string
		wantNext   string
	}{
		{"empty", nil, "", ""},
		{
			"running first, pending ascending, terminal descending",
			[]*v1alpha1.Promotion{
				promo("s.01", v1alpha1.PromotionPhaseSucceeded),
				promo("s.05", v1alpha1.PromotionPhasePending),
				promo("s.03", v1alpha1.PromotionPhaseFailed),
				promo("s.04", v1alpha1.PromotionPhaseRunning),
				promo("s.06", ""),
				promo("s.02", v1alpha1.PromotionPhaseAborted),
			},
			"s.04,s.05,s.06,s.03,s.02,s.01", "s.04",
		},
		{
			"no running: the oldest pending",
			[]*v1alpha1.Promotion{
				promo("s.09", v1alpha1.PromotionPhasePending),
				promo("s.07", ""),
				promo("s.08", v1alpha1.PromotionPhaseSucceeded),
			},
			"s.07,s.09,s.08", "s.07",
		},
		{
			"only terminal",
			[]*v1alpha1.Promotion{promo("s.01", v1alpha1.PromotionPhaseErrored), promo("s.02", v1alpha1.PromotionPhaseSucceeded)},
			"s.02,s.01", "",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sorted := slices.Clone(tc.promos)
			slices.SortFunc(sorted, ComparePromotionByPhaseAndCreationTime)
			if got := names(sorted); got != tc.wantSorted {
				t.Errorf("sorted %s, want %s", got, tc.wantSorted)
			}
			next := NextPromotion(tc.promos)
			if got := ""; next != nil {
				got = next.Name
				if got != tc.wantNext {
					t.Errorf("next %s, want %s", got, tc.wantNext)
				}
			} else if tc.wantNext != "" {
				t.Errorf("next nil, want %s", tc.wantNext)
			}
		})
	}
}
