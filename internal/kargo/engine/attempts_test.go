package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func TestRetriesAndTimeout(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	tests := []struct {
		name    string
		retry   *kargoapi.PromotionStepRetry
		retries int
		timeout time.Duration
	}{
		{"no retry", nil, 0, 0},
		{"zero threshold is the default 1", &kargoapi.PromotionStepRetry{}, 0, 0},
		{"threshold 1", &kargoapi.PromotionStepRetry{ErrorThreshold: 1}, 0, 0},
		{"threshold 4", &kargoapi.PromotionStepRetry{ErrorThreshold: 4}, 3, 0},
		{"timeout", &kargoapi.PromotionStepRetry{Timeout: d(90 * time.Second)}, 0, 90 * time.Second},
		{"zero timeout is none", &kargoapi.PromotionStepRetry{Timeout: d(0)}, 0, 0},
		{"negative timeout is none", &kargoapi.PromotionStepRetry{Timeout: d(-time.Second)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kargoapi.PromotionStep{Retry: tt.retry}
			if got := Retries(s); got != tt.retries {
				t.Errorf("Retries = %d, want %d", got, tt.retries)
			}
			if got := Timeout(s); got != tt.timeout {
				t.Errorf("Timeout = %s, want %s", got, tt.timeout)
			}
		})
	}
}

func TestStepStatusOf(t *testing.T) {
	plain := kargoapi.PromotionStep{}
	th3 := kargoapi.PromotionStep{Retry: &kargoapi.PromotionStepRetry{ErrorThreshold: 3}}
	timed := kargoapi.PromotionStep{Retry: &kargoapi.PromotionStepRetry{Timeout: &metav1.Duration{Duration: 5 * time.Minute}}}
	tests := []struct {
		name     string
		phase    string
		attempts uint32
		step     kargoapi.PromotionStep
		err      string
		status   StepStatus
		msg      string
	}{
		{"succeeded", "SUCCEEDED", 1, plain, "", StepSucceeded, ""},
		{"recovered is succeeded", "RECOVERED", 1, plain, "", StepSucceeded, ""},
		{"failed, default threshold", "FAILED", 1, plain, "exit 1", StepFailed, "exit 1"},
		{"failed without message", "FAILED", 1, plain, "", StepFailed, `step "deploy" failed`},
		{"failed, threshold met", "FAILED", 3, th3, "exit 1", StepErrored, `step "deploy" met error threshold of 3: exit 1`},
		{"failed, threshold exceeded", "FAILED", 4, th3, "exit 1", StepErrored, `step "deploy" met error threshold of 3: exit 1`},
		{"failed, threshold met, no message", "FAILED", 3, th3, "", StepErrored, `step "deploy" met error threshold of 3: no details provided`},
		{"failed before threshold (not retried)", "FAILED", 2, th3, "bad input", StepFailed, "bad input"},
		{"timed out", "TIMED_OUT", 1, timed, "deadline", StepErrored, `step "deploy" timed out after 5m0s`},
		{"timed out, executor timeout", "TIMED_OUT", 1, plain, "deadline", StepErrored, `step "deploy" timed out: deadline`},
		{"timed out, executor timeout, no message", "TIMED_OUT", 1, plain, "", StepErrored, `step "deploy" timed out`},
		{"aborted", "ABORTED", 1, plain, "Promotion terminated by bob", StepAborted, "Promotion terminated by bob"},
		{"aborted without message", "ABORTED", 1, plain, "", StepAborted, `step "deploy" was aborted`},
		{"running", "RUNNING", 1, plain, "", StepRunning, ""},
		{"queued", "QUEUED", 0, plain, "", StepRunning, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg := StepStatusOf(tt.phase, tt.attempts, tt.step, "deploy", tt.err)
			if status != tt.status || msg != tt.msg {
				t.Fatalf("StepStatusOf = %q, %q; want %q, %q", status, msg, tt.status, tt.msg)
			}
		})
	}
}
