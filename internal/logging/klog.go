package logging

import (
	"flag"

	"github.com/go-logr/logr"
	"github.com/rs/zerolog"
	"k8s.io/klog/v2"
)

// RouteKlog sends everything the Kubernetes libraries log through klog to
// log. Their informational chatter lands at debug (verbosity 0) or trace
// (higher verbosity); their errors at warn, because the embedded API server
// reports routine events (an unauthenticated request, a closed watch) as
// errors.
//
// klog filters verbose calls against its own -v before any logger sees
// them, so at trace level its verbosity is raised to match.
func RouteKlog(log zerolog.Logger) {
	klog.SetLoggerWithOptions(logr.New(&klogSink{log: log.With().Str("component", "k8s").Logger()}), klog.ContextualLogger(true))
	v := "0"
	if log.GetLevel() <= zerolog.TraceLevel {
		v = "4"
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", v)
}

type klogSink struct {
	log  zerolog.Logger
	name string
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool {
	if level == 0 {
		return s.log.GetLevel() <= zerolog.DebugLevel
	}
	return s.log.GetLevel() <= zerolog.TraceLevel
}

func (s *klogSink) Info(level int, msg string, kv ...any) {
	ev := s.log.Debug()
	if level > 0 {
		ev = s.log.Trace()
	}
	s.write(ev, msg, kv)
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.write(s.log.Warn().Err(err), msg, kv)
}

func (s *klogSink) write(ev *zerolog.Event, msg string, kv []any) {
	if ev == nil {
		return
	}
	if s.name != "" {
		ev = ev.Str("logger", s.name)
	}
	ev.Fields(kv).Msg(msg)
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.log.With().Fields(kv).Logger(), name: s.name}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "/" + name
	}
	return &klogSink{log: s.log, name: name}
}
