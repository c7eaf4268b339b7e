package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/rs/zerolog"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
)

// lines decodes the JSON lines in buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// checkLine wants got to be one line at wantLevel with wantField, or none
// when wantLevel is "".
func checkLine(t *testing.T, got []map[string]any, wantLevel string, wantField map[string]any) {
	t.Helper()
	if wantLevel == "" {
		if len(got) != 0 {
			t.Errorf("want nothing, got %v", got)
		}
		return
	}
	if len(got) != 1 || got[0]["level"] != wantLevel {
		t.Fatalf("got %v, want one %s line", got, wantLevel)
	}
	for k, v := range wantField {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, got[0][k], v, got[0])
		}
	}
}

func withMessage(fields map[string]any, msg string) map[string]any {
	out := map[string]any{"message": msg}
	maps.Copy(out, fields)
	return out
}

func TestNew(t *testing.T) {
	tests := []struct {
		level   string
		format  Format
		wantErr bool
		enabled zerolog.Level // the lowest level written
	}{
		{"", FormatAuto, false, zerolog.InfoLevel},
		{"trace", FormatJSON, false, zerolog.TraceLevel},
		{"debug", FormatJSON, false, zerolog.DebugLevel},
		{"WARN", FormatJSON, false, zerolog.WarnLevel},
		{"error", FormatConsole, false, zerolog.ErrorLevel},
		{"verbose", FormatJSON, true, 0},
		{"info", "xml", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+string(tt.format), func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(&buf, tt.level, tt.format)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if log.GetLevel() != tt.enabled {
				t.Errorf("level = %v, want %v", log.GetLevel(), tt.enabled)
			}
			log.WithLevel(tt.enabled).Msg("shown")
			if tt.enabled > zerolog.TraceLevel {
				log.WithLevel(tt.enabled - 1).Msg("hidden")
			}
			out := buf.String()
			if !strings.Contains(out, "shown") || strings.Contains(out, "hidden") {
				t.Errorf("output %q: want only the %v line", out, tt.enabled)
			}
			// Auto picks JSON when out is not a terminal.
			if isJSON := json.Valid(bytes.TrimSpace(buf.Bytes())); isJSON != (tt.format != FormatConsole) {
				t.Errorf("format %q: JSON = %v; output %q", tt.format, isJSON, out)
			}
		})
	}
}

// setKlogVerbosity sets klog's own -v, which gates klog.V(n) before any
// logger sees the call.
func setKlogVerbosity(t *testing.T, v string) {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Set("v", "0") })
}

func TestRouteKlog(t *testing.T) {
	tests := []struct {
		name      string
		level     zerolog.Level // of the process logger
		klogV     string        // klog's own -v; "" leaves it at 0
		log       func()
		wantLevel string // "" means nothing is written
		wantMsg   string
		wantField map[string]any
	}{
		{name: "Info is debug", level: zerolog.TraceLevel, log: func() { klog.Info("hello") }, wantLevel: "debug", wantMsg: "hello"},
		{name: "InfoS keeps pairs", level: zerolog.DebugLevel, log: func() { klog.InfoS("started", "port", 6443) },
			wantLevel: "debug", wantMsg: "started", wantField: map[string]any{"port": 6443.0, "component": "k8s"}},
		{name: "Info hidden at info", level: zerolog.InfoLevel, log: func() { klog.Info("chatter") }},
		{name: "Error is warn", level: zerolog.InfoLevel, log: func() { klog.Error("watch closed") }, wantLevel: "warn", wantMsg: "watch closed"},
		{name: "ErrorS keeps the error", level: zerolog.InfoLevel, log: func() { klog.ErrorS(errors.New("eof"), "watch failed", "resource", "pods") },
			wantLevel: "warn", wantMsg: "watch failed", wantField: map[string]any{"error": "eof", "resource": "pods"}},
		{name: "V(2) is trace with klog -v=2", level: zerolog.TraceLevel, klogV: "2", log: func() { klog.V(2).Info("detail") }, wantLevel: "trace", wantMsg: "detail"},
		// The doc promises klog's higher verbosity at trace, but klog's own -v
		// (which the server never raises) drops klog.V(n) before the sink.
		{name: "V(2) is trace at trace level", level: zerolog.TraceLevel, log: func() { klog.V(2).Info("detail") }, wantLevel: "trace", wantMsg: "detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			RouteKlog(zerolog.New(&buf).Level(tt.level))
			t.Cleanup(klog.ClearLogger)
			if tt.klogV != "" {
				setKlogVerbosity(t, tt.klogV)
			}
			tt.log()
			checkLine(t, lines(t, &buf), tt.wantLevel, withMessage(tt.wantField, tt.wantMsg))
		})
	}
}

// Called directly (as klog would with ContextualLogger(true)), the sink maps
// verbosity to level and joins logger names with "/".
func TestKlogSink(t *testing.T) {
	tests := []struct {
		name      string
		level     zerolog.Level
		log       func(logr.Logger)
		wantLevel string // "" means nothing is written
		wantField map[string]any
	}{
		{"V(0) is debug", zerolog.DebugLevel, func(l logr.Logger) { l.Info("m") }, "debug", nil},
		{"V(2) is trace", zerolog.TraceLevel, func(l logr.Logger) { l.V(2).Info("m") }, "trace", nil},
		{"V(2) hidden at debug", zerolog.DebugLevel, func(l logr.Logger) { l.V(2).Info("m") }, "", nil},
		{"names and values", zerolog.DebugLevel, func(l logr.Logger) { l.WithName("a").WithValues("k", "v").WithName("b").Info("m") },
			"debug", map[string]any{"logger": "a/b", "k": "v"}},
		{"error is warn", zerolog.WarnLevel, func(l logr.Logger) { l.WithName("a").Error(errors.New("x"), "m") },
			"warn", map[string]any{"logger": "a", "error": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(logr.New(&klogSink{log: zerolog.New(&buf).Level(tt.level)}))
			checkLine(t, lines(t, &buf), tt.wantLevel, tt.wantField)
		})
	}
}

func TestNewZap(t *testing.T) {
	tests := []struct {
		name      string
		level     zerolog.Level
		log       func(*zap.Logger)
		wantLevel string // "" means nothing is written
		wantField map[string]any
	}{
		{"info is debug", zerolog.DebugLevel, func(z *zap.Logger) { z.Info("m", zap.String("k", "v")) }, "debug", map[string]any{"k": "v"}},
		{"info hidden at info", zerolog.InfoLevel, func(z *zap.Logger) { z.Info("m") }, "", nil},
		{"warn is warn", zerolog.InfoLevel, func(z *zap.Logger) { z.Warn("m", zap.Int("n", 3)) }, "warn", map[string]any{"n": 3.0}},
		{"error is error", zerolog.InfoLevel, func(z *zap.Logger) { z.Error("m", zap.Error(errors.New("disk full"))) }, "error", map[string]any{"error": "disk full"}},
		{"With fields kept", zerolog.InfoLevel, func(z *zap.Logger) { z.With(zap.String("member", "m1")).Warn("m", zap.Bool("b", true)) },
			"warn", map[string]any{"member": "m1", "b": true}},
		{"benign single port is debug", zerolog.DebugLevel, func(z *zap.Logger) {
			z.Warn("Running http and grpc server on single port. This is not recommended for production.")
		}, "debug", nil},
		{"benign simple token is debug", zerolog.DebugLevel, func(z *zap.Logger) { z.Warn("simple token is not cryptographically signed") }, "debug", nil},
		{"benign hidden at info", zerolog.InfoLevel, func(z *zap.Logger) { z.Warn("simple token is not cryptographically signed") }, "", nil},
		{"first start's storage version is debug", zerolog.DebugLevel, func(z *zap.Logger) {
			z.Error("failed to update storage version", zap.Error(errors.New("cannot detect storage schema version: missing term information")))
		}, "debug", nil},
		{"first start's schema version is debug", zerolog.DebugLevel, func(z *zap.Logger) {
			z.Warn("Failed to detect schema version", zap.Error(errors.New("missing term information")))
		}, "debug", nil},
		{"storage version otherwise is error", zerolog.InfoLevel, func(z *zap.Logger) {
			z.Error("failed to update storage version", zap.Error(errors.New("disk full")))
		}, "error", nil},
		{"error while stopping is debug", zerolog.DebugLevel, func(z *zap.Logger) { z.Error("listener closed") }, "debug", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			var stopping atomic.Bool
			stopping.Store(strings.Contains(tt.name, "stopping"))
			tt.log(NewZap(zerolog.New(&buf).Level(tt.level), &stopping))
			checkLine(t, lines(t, &buf), tt.wantLevel, tt.wantField)
		})
	}
}
