package v1alpha1

import "testing"

func TestParseVerificationRequest(t *testing.T) {
	cases := []struct {
		in    string
		id    string
		match bool
		str   string
	}{
		{in: "", id: "x"},
		{in: "abc", id: "abc", match: true, str: `{"id":"abc"}`},
		{in: `{"id":"abc","actor":"me"}`, id: "abc", match: true, str: `{"id":"abc","actor":"me"}`},
		{in: `{"id":"abc"}`, id: "other", str: `{"id":"abc"}`},
		{in: `{"actor":"me"}`, id: ""},
		{in: `{"id":5}`, id: "5"}, // JSON of another shape is no request
		{in: "abc", id: "", str: `{"id":"abc"}`},
	}
	for _, tc := range cases {
		r := ParseVerificationRequest(tc.in)
		if got := r.ForID(tc.id); got != tc.match {
			t.Errorf("ParseVerificationRequest(%q).ForID(%q) = %v", tc.in, tc.id, got)
		}
		if got := r.String(); got != tc.str {
			t.Errorf("ParseVerificationRequest(%q).String() = %q, want %q", tc.in, got, tc.str)
		}
	}
}
