package rules

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func promo(name string, phase kargoapi.PromotionPhase) *kargoapi.Promotion {
	return &kargoapi.Promotion{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kargo-demo"},
		Spec:       kargoapi.PromotionSpec{Stage: "test", Freight: "f-" + name},
		Status:     kargoapi.PromotionStatus{Phase: phase},
	}
}

func names(ps []*kargoapi.Promotion) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestComparePromotionPhase(t *testing.T) {
	cases := []struct {
		a, b kargoapi.PromotionPhase
		want int
	}{
		{kargoapi.PromotionPhaseRunning, kargoapi.PromotionPhaseRunning, 0},
		{kargoapi.PromotionPhaseRunning, kargoapi.PromotionPhasePending, -1},
		{kargoapi.PromotionPhasePending, kargoapi.PromotionPhaseRunning, 1},
		{"", kargoapi.PromotionPhasePending, 0},
		{kargoapi.PromotionPhasePending, kargoapi.PromotionPhaseSucceeded, -1},
		{kargoapi.PromotionPhaseAborted, "", 1},
		{kargoapi.PromotionPhaseFailed, kargoapi.PromotionPhaseSucceeded, 0},
		{kargoapi.PromotionPhaseErrored, kargoapi.PromotionPhaseRunning, 1},
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
		promos     []*kargoapi.Promotion
		wantSorted string
		wantNext   string
	}{
		{"empty", nil, "", ""},
		{
			"running first, pending ascending, terminal descending",
			[]*kargoapi.Promotion{
				promo("s.01", kargoapi.PromotionPhaseSucceeded),
				promo("s.05", kargoapi.PromotionPhasePending),
				promo("s.03", kargoapi.PromotionPhaseFailed),
				promo("s.04", kargoapi.PromotionPhaseRunning),
				promo("s.06", ""),
				promo("s.02", kargoapi.PromotionPhaseAborted),
			},
			"s.04,s.05,s.06,s.03,s.02,s.01", "s.04",
		},
		{
			"no running: the oldest pending",
			[]*kargoapi.Promotion{
				promo("s.09", kargoapi.PromotionPhasePending),
				promo("s.07", ""),
				promo("s.08", kargoapi.PromotionPhaseSucceeded),
			},
			"s.07,s.09,s.08", "s.07",
		},
		{
			"only terminal",
			[]*kargoapi.Promotion{promo("s.01", kargoapi.PromotionPhaseErrored), promo("s.02", kargoapi.PromotionPhaseSucceeded)},
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
