package logging

import (
	"strings"

	"github.com/rs/zerolog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewZap returns a zap logger (what etcd's embed package takes) that writes
// through log. etcd's info lines are start-up and compaction chatter, so
// they go to debug; warnings and errors keep their level.
func NewZap(log zerolog.Logger) *zap.Logger {
	return zap.New(&zapCore{log: log})
}

type zapCore struct {
	log    zerolog.Logger
	fields []zapcore.Field
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	return c.log.GetLevel() <= zerologLevel(l)
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	all := append(append([]zapcore.Field(nil), c.fields...), fields...)
	return &zapCore{log: c.log, fields: all}
}

func (c *zapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	level := zerologLevel(e.Level)
	if benign[e.Message] || closedAtStop(e.Message, enc.Fields) {
		level = zerolog.DebugLevel
	}
	c.log.WithLevel(level).Fields(enc.Fields).Msg(e.Message)
	return nil
}

// closedAtStop is etcd reporting, at error level, that its listeners were
// closed: what a clean stop does.
func closedAtStop(msg string, fields map[string]any) bool {
	err, _ := fields["error"].(string)
	return msg == "setting up serving from embedded etcd failed." && strings.Contains(err, "use of closed network connection")
}

// benign are etcd warnings about choices made on purpose for a private,
// single-member store on a unix socket.
var benign = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

func (c *zapCore) Sync() error { return nil }

func zerologLevel(l zapcore.Level) zerolog.Level {
	switch {
	case l <= zapcore.InfoLevel:
		return zerolog.DebugLevel
	case l == zapcore.WarnLevel:
		return zerolog.WarnLevel
	default:
		return zerolog.ErrorLevel
	}
}
