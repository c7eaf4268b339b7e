package logging

import (
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewZap returns a zap logger (what etcd's embed package takes) that writes
// through log. etcd's info lines are start-up and compaction chatter, so
// they go to debug; warnings and errors keep their level, except once
// stopping is set: then etcd reports its listeners closing, at error
// level, which is what a clean stop does.
func NewZap(log zerolog.Logger, stopping *atomic.Bool) *zap.Logger {
	return zap.New(&zapCore{log: log, stopping: stopping})
}

type zapCore struct {
	log      zerolog.Logger
	stopping *atomic.Bool
	fields   []zapcore.Field
}

func (c *zapCore) Enabled(l zapcore.Level) bool {
	return c.log.GetLevel() <= zerologLevel(l)
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	all := append(append([]zapcore.Field(nil), c.fields...), fields...)
	return &zapCore{log: c.log, stopping: c.stopping, fields: all}
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
	if benign[e.Message] || firstStartNoise(e.Message, enc.Fields) || (c.stopping != nil && c.stopping.Load()) {
		level = zerolog.DebugLevel
	}
	c.log.WithLevel(level).Fields(enc.Fields).Msg(e.Message)
	return nil
}

// benign are etcd warnings about choices made on purpose for a private,
// single-member store on a unix socket.
var benign = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

// firstStartNoise is what a new member logs on its first start (at error
// and at warning level): its version monitor reads and tries to record the
// storage version before the first raft term is in the store, and succeeds
// on a later round. Nothing a user could act on.
func firstStartNoise(msg string, fields map[string]any) bool {
	err, _ := fields["error"].(string)
	return (msg == "failed to update storage version" || msg == "Failed to detect schema version") &&
		strings.HasSuffix(err, "missing term information")
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
