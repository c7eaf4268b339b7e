package logs

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"taskactions/internal/auth"
)

func realTaskToken(t *testing.T) string {
	t.Helper()
	signer, err := auth.NewSigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return signer.TaskToken(auth.TaskScope{Project: "p", Domain: "d", Run: "r", Action: "a", UID: "0b8f2c1e-uid", Attempt: 1}, time.Hour)
}

// What a task writes reaches its log with task tokens masked, however the
// writes cut the token; nothing else changes.
func TestWriterMasksTaskTokens(t *testing.T) {
	token := realTaskToken(t)
	text := "PATH=/bin\nTASKACTIONS_TOKEN=" + token + "\ncurl -H 'Authorization: Bearer " + token + "'\nstart of data1.x tail: t"
	want := "PATH=/bin\nTASKACTIONS_TOKEN=***\ncurl -H 'Authorization: Bearer ***'\nstart of data1.x tail: t"
	for cut := 0; cut <= len(text); cut++ {
		s := New(t.TempDir(), 0)
		w, err := s.Create(key(1, Stdout))
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{text[:cut], text[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("write: %d %v", n, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(s.Path(key(1, Stdout)))
		if string(b) != want {
			t.Fatalf("cut at %d: the log is\n%q\nwant\n%q", cut, b, want)
		}
	}
}

// Only what may begin a token is held back; a long word is not.
func TestMaskerHoldsOnlyATokensBeginning(t *testing.T) {
	token := realTaskToken(t)
	for _, c := range []struct{ in, now string }{
		{"line\n", "line\n"},
		{"ends in a t", "ends in a "},
		{"half " + token[:len(token)/2], "half "},
		{"whole " + token, "whole ***"},
		{"not one: tb1.eyJ", "not one: tb1.eyJ"},
		{strings.Repeat("a", 2*maxHeld) + "ta1.eyJ", strings.Repeat("a", 2*maxHeld) + "ta1.eyJ"},
	} {
		var m masker
		if got := string(m.mask([]byte(c.in))); got != c.now {
			t.Errorf("%.40q: written at once %.60q, want %.60q", c.in, got, c.now)
		}
		if got := string(m.mask(nil)) + string(m.flush()); c.now+got != strings.Replace(c.in, token, "***", 1) {
			t.Errorf("%.40q: the rest %q", c.in, got)
		}
	}
}
