package lease

import (
	"strings"
	"testing"
	"time"
)

func TestTimingsValidate(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		t    Timings
		want string // "" valid
	}{
		{DefaultTimings, ""},
		{Timings{LeaseDuration: 4 * s, RenewDeadline: 3 * s, RetryPeriod: s}, ""},
		{Timings{LeaseDuration: 15 * s, RenewDeadline: 10 * s}, "retry period must be positive"},
		{Timings{LeaseDuration: 15 * s, RenewDeadline: 2 * s, RetryPeriod: 2 * s}, "renew deadline (2s) must be longer than its retry period (2s)"},
		{Timings{LeaseDuration: 10 * s, RenewDeadline: 10 * s, RetryPeriod: 2 * s}, "duration (10s) must be longer than its renew deadline (10s)"},
	} {
		err := tc.t.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.t, err, tc.want)
		}
	}
}
