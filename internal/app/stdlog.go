package app

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// newStdLogger routes net/http's error log (TLS handshake failures and the
// like) into zerolog at debug: they are the clients' doing.
func newStdLogger(l zerolog.Logger) *log.Logger {
	return log.New(stdWriter{l.With().Str("component", "http").Logger()}, "", 0)
}

type stdWriter struct{ l zerolog.Logger }

func (w stdWriter) Write(p []byte) (int, error) {
	w.l.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
