package logs_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"taskactions/internal/auth"
	"taskactions/internal/logs"
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
		s := logs.New(t.TempDir(), 0)
		k := logs.Key{Project: "p", Domain: "d", Run: "r", Action: "a", Attempt: 1, Stream: logs.Stdout}
		w, err := s.Create(k)
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
		b, _ := os.ReadFile(s.Path(k))
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
		{strings.Repeat("a", 2*logs.MaxHeld) + "ta1.eyJ", strings.Repeat("a", 2*logs.MaxHeld) + "ta1.eyJ"},
	} {
		var m logs.TestMasker
		if got := string(m.Mask([]byte(c.in))); got != c.now {
			t.Errorf("%.40q: written at once %.60q, want %.60q", c.in, got, c.now)
		}
		if got := string(m.Mask(nil)) + string(m.Flush()); c.now+got != strings.Replace(c.in, token, "***", 1) {
			t.Errorf("%.40q: the rest %q", c.in, got)
		}
	}
}
