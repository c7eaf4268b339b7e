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

func TestCutSequence(t *testing.T) {
	for _, c := range []struct {
		before, after string
		want          int
	}{
		{"ab", "c", 0},
		{"a\xc3", "\xa9b", 1},       // inside é
		{"\xe2\x82", "\xac", 2},     // inside €, after two of three
		{"\xf0\x9f\x98", "\x80", 3}, // inside 😀, after three of four
		{"a\xc3", "", 1},            // the rest is not written yet
		{"\xc3\xa9", "b", 0},        // after é
		{"a\xc3", "b", 0},           // no character: 0xC3 then b
		{"\xef\xbf", "\xbd", 2},     // inside U+FFFD, which is a character
	} {
		if got := cutSequence([]byte(c.before), []byte(c.after)); got != c.want {
			t.Errorf("cutSequence(%q, %q) = %d, want %d", c.before, c.after, got, c.want)
		}
	}
}
