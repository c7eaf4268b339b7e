package sse

import "testing"

func TestWholeRunes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{"h\xc3\xa9", "h\xc3\xa9"},         // é whole
		{"h\xc3", "h"},                     // é cut after its first byte
		{"\xe2\x82", ""},                   // € cut after two of three
		{"a\xe2\x82\xac", "a\xe2\x82\xac"}, // € whole
		{"a\xf0\x9f\x98", "a"},             // 😀 cut after three of four
		{"a\x80", "a\x80"},                 // a stray continuation byte stays: it is invalid anyway
		{"", ""},
	} {
		if got := string(wholeRunes([]byte(c.in))); got != c.want {
			t.Errorf("wholeRunes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
