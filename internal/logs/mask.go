package logs

import (
	"bytes"
	"regexp"
)

// Task tokens (auth.Signer.TaskToken: "ta1.", the claims as base64url
// JSON, ".", the 43-character base64url HMAC) are masked in what a task
// writes, so that a task that prints its environment does not hand its
// TASKACTIONS_TOKEN to everyone who may read its log.
var (
	taskToken = regexp.MustCompile(`ta1\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}`)
	// taskTokenStart is an unfinished token at the end of what was
	// written: the rest may come with the next write.
	taskTokenStart = regexp.MustCompile(`^t(a(1(\.(e(y(J[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]{0,42})?)?)?)?)?)?)?$`)
)

// tokenMask is the text that replaces a token.
var tokenMask = []byte("***")

// maxHeld bounds what a masker holds back: a token is some 400 bytes.
const maxHeld = 4 << 10

// masker masks task tokens in a stream written in pieces: a token cut
// between two writes is masked too, at the price of holding back the end
// of a write that may be a token's beginning until the next write or the
// end.
type masker struct{ held []byte }

// mask returns what of the held bytes and p may be stored now, tokens
// masked.
func (m *masker) mask(p []byte) []byte {
	buf := append(m.held, p...)
	cut := len(buf) - unfinishedToken(buf)
	m.held = append([]byte(nil), buf[cut:]...)
	return taskToken.ReplaceAll(buf[:cut], tokenMask)
}

// flush returns what is held, at the end.
func (m *masker) flush() []byte {
	out := taskToken.ReplaceAll(m.held, tokenMask)
	m.held = nil
	return out
}

// unfinishedToken is the length of the end of b that may be the
// beginning of a token: within its last run of token characters, from
// the first "t" where a token could begin.
func unfinishedToken(b []byte) int {
	word := len(b)
	for word > 0 && word > len(b)-maxHeld && isTokenByte(b[word-1]) {
		word--
	}
	if word > 0 && isTokenByte(b[word-1]) {
		return 0 // longer than any token
	}
	tail := b[word:]
	for i := 0; i < len(tail); i++ {
		j := bytes.IndexByte(tail[i:], 't')
		if j < 0 {
			break
		}
		i += j
		if taskTokenStart.Match(tail[i:]) {
			return len(tail) - i
		}
	}
	return 0
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
