// Package logging builds the process logger and routes the logs of the
// libraries we embed (klog from Kubernetes, zap from etcd) into it, so that
// every line the process writes has one format.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Format is the log line format.
type Format string

// Supported formats. Auto picks console on a terminal and JSON otherwise.
const (
	FormatAuto    Format = ""
	FormatJSON    Format = "json"
	FormatConsole Format = "console"
)

// New returns a logger writing to out at the given level ("debug", "info",
// ...). out is usually os.Stderr.
func New(out io.Writer, level string, format Format) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zerolog.ParseLevel(level); err != nil {
			return zerolog.Nop(), fmt.Errorf("log level %q: %w", level, err)
		}
	}
	switch format {
	case FormatAuto:
		if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			format = FormatConsole
		} else {
			format = FormatJSON
		}
	case FormatJSON, FormatConsole:
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want json or console", format)
	}
	if format == FormatConsole {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly}
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}
