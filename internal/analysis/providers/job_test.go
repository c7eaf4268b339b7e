package providers

import (
	"errors"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// jobMetric is a Rollouts job metric as its docs show one, with fields
// JobProcess ignores set too.
func jobMetric() rolloutsapi.Metric {
	return rolloutsapi.Metric{Name: "smoke", Provider: rolloutsapi.MetricProvider{Job: &rolloutsapi.JobMetric{
		Metadata: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(1)),
			ActiveDeadlineSeconds:   ptr(int64(90)),
			TTLSecondsAfterFinished: ptr(int32(60)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: "smoke",
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:        []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
					SecurityContext:    &corev1.PodSecurityContext{}, // empty: asks nothing
					Containers: []corev1.Container{{
						Name:            "test",
						Image:           "curlimages/curl:8.7.1",
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"sh", "-c"},
						Args:            []string{`curl -fsS "$(BASE)/health" && echo $$HOME $(UNSET)`},
						Env: []corev1.EnvVar{
							{Name: "HOST", Value: "canary.svc"},
							{Name: "BASE", Value: "http://$(HOST):8080"},
							{Name: "EARLY", Value: "$(LATE)"}, // LATE is not defined yet
							{Name: "LATE", Value: "x"},
							{Name: "HOST", Value: "stable.svc"}, // the later wins; BASE was expanded already
							{Name: "EMPTY"},
						},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
						Ports:     []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							Exec: &corev1.ExecAction{Command: []string{"true"}}}},
						SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{}}, // nothing asked
					}},
				},
			},
		},
	}}}
}

func TestJobProcessAccepted(t *testing.T) {
	got, err := JobProcess(jobMetric())
	if err != nil {
		t.Fatal(err)
	}
	want := Process{
		Argv: []string{"sh", "-c", `curl -fsS "http://canary.svc:8080/health" && echo $HOME $(UNSET)`},
		Env: map[string]string{
			"HOST": "stable.svc", "BASE": "http://canary.svc:8080", "EARLY": "$(LATE)", "LATE": "x", "EMPTY": "",
		},
		Retries:   1,
		Deadline:  90 * time.Second,
		Image:     "curlimages/curl:8.7.1",
		Container: "test",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("process =\n%#v\nwant\n%#v", got, want)
	}
}

func TestJobProcessDefaults(t *testing.T) {
	m := rolloutsapi.Metric{Provider: rolloutsapi.MetricProvider{Job: &rolloutsapi.JobMetric{Spec: batchv1.JobSpec{
		Parallelism: ptr(int32(1)), Completions: ptr(int32(1)), CompletionMode: ptr(batchv1.NonIndexedCompletion),
		Suspend: ptr(false), ManagedBy: ptr(batchv1.JobControllerName),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyOnFailure,
			HostUsers:     ptr(true),
			Containers:    []corev1.Container{{Name: "c", Command: []string{"/bin/true"}}},
		}},
	}}}}
	got, err := JobProcess(m)
	if err != nil {
		t.Fatal(err)
	}
	want := Process{Argv: []string{"/bin/true"}, Env: map[string]string{}, Retries: DefaultBackoffLimit, Container: "c"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("process = %#v, want %#v", got, want)
	}
}

func TestJobProcessRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*batchv1.JobSpec)
		field  string
	}{
		{"two containers", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers = append(s.Template.Spec.Containers, corev1.Container{Name: "side", Command: []string{"x"}})
		}, "spec.template.spec.containers"},
		{"no container", func(s *batchv1.JobSpec) { s.Template.Spec.Containers = nil }, "spec.template.spec.containers"},
		{"init container", func(s *batchv1.JobSpec) {
			s.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Command: []string{"x"}}}
		}, "spec.template.spec.initContainers"},
		{"volumes", func(s *batchv1.JobSpec) {
			s.Template.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "spec.template.spec.volumes"},
		{"volumeMounts", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
		}, "spec.template.spec.containers[0].volumeMounts"},
		{"valueFrom", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].Env = append(s.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "TOKEN",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}})
		}, "spec.template.spec.containers[0].env[6].valueFrom"},
		{"envFrom", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}
		}, "spec.template.spec.containers[0].envFrom"},
		{"reserved env name", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].Env = append(s.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "TASKACTIONS_TOKEN", Value: "x"})
		}, "spec.template.spec.containers[0].env[6]"},
		{"workingDir", func(s *batchv1.JobSpec) { s.Template.Spec.Containers[0].WorkingDir = "/work" }, "spec.template.spec.containers[0].workingDir"},
		{"no command", func(s *batchv1.JobSpec) { s.Template.Spec.Containers[0].Command = nil }, "spec.template.spec.containers[0].command"},
		{"container runAsUser", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1000))}
		}, "spec.template.spec.containers[0].securityContext"},
		{"container privileged", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		}, "spec.template.spec.containers[0].securityContext"},
		{"pod runAsNonRoot", func(s *batchv1.JobSpec) {
			s.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
		}, "spec.template.spec.securityContext"},
		{"hostUsers false", func(s *batchv1.JobSpec) { s.Template.Spec.HostUsers = ptr(false) }, "spec.template.spec.hostUsers"},
		{"runtimeClassName", func(s *batchv1.JobSpec) { s.Template.Spec.RuntimeClassName = ptr("gvisor") }, "spec.template.spec.runtimeClassName"},
		{"liveness probe", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, "spec.template.spec.containers[0].livenessProbe"},
		{"lifecycle", func(s *batchv1.JobSpec) {
			s.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}
		}, "spec.template.spec.containers[0].lifecycle"},
		{"tty", func(s *batchv1.JobSpec) { s.Template.Spec.Containers[0].TTY = true }, "spec.template.spec.containers[0].tty"},
		{"hostAliases", func(s *batchv1.JobSpec) {
			s.Template.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"x"}}}
		}, "spec.template.spec.hostAliases"},
		{"pod deadline", func(s *batchv1.JobSpec) { s.Template.Spec.ActiveDeadlineSeconds = ptr(int64(5)) }, "spec.template.spec.activeDeadlineSeconds"},
		{"restartPolicy unset", func(s *batchv1.JobSpec) { s.Template.Spec.RestartPolicy = "" }, "spec.template.spec.restartPolicy"},
		{"restartPolicy Always", func(s *batchv1.JobSpec) { s.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "spec.template.spec.restartPolicy"},
		{"parallelism", func(s *batchv1.JobSpec) { s.Parallelism = ptr(int32(2)) }, "spec.parallelism"},
		{"completions", func(s *batchv1.JobSpec) { s.Completions = ptr(int32(3)) }, "spec.completions"},
		{"indexed", func(s *batchv1.JobSpec) { s.CompletionMode = ptr(batchv1.IndexedCompletion) }, "spec.completionMode"},
		{"suspend", func(s *batchv1.JobSpec) { s.Suspend = ptr(true) }, "spec.suspend"},
		{"managedBy", func(s *batchv1.JobSpec) { s.ManagedBy = ptr("example.com/queue") }, "spec.managedBy"},
		{"negative backoffLimit", func(s *batchv1.JobSpec) { s.BackoffLimit = ptr(int32(-1)) }, "spec.backoffLimit"},
		{"zero deadline", func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = ptr(int64(0)) }, "spec.activeDeadlineSeconds"},
		{"podFailurePolicy", func(s *batchv1.JobSpec) {
			s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore}}}
		}, "spec.podFailurePolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := jobMetric()
			tc.change(&m.Provider.Job.Spec)
			_, err := JobProcess(m)
			var se *JobSpecError
			if !errors.As(err, &se) || se.Field != tc.field || se.Reason == "" {
				t.Fatalf("error = %v, want a JobSpecError at %s", err, tc.field)
			}
			t.Log(err)
		})
	}
	if _, err := JobProcess(rolloutsapi.Metric{}); err == nil {
		t.Fatal("a metric without a job was mapped")
	}
}

func TestJobProcessMessages(t *testing.T) {
	m := jobMetric()
	m.Provider.Job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	_, err := JobProcess(m)
	if want := `job metric cannot run as a process: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`; err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	m = jobMetric()
	m.Provider.Job.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "v"}}
	_, err = JobProcess(m)
	if want := "job metric cannot run as a process: spec.template.spec.volumes: volumes cannot be mounted: the job runs as a local process of the server, not in a pod"; err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}

// Every field of the specs JobProcess reads is decided (a Kubernetes
// upgrade that adds one must decide it), and no rule names a field that
// is gone.
func TestJobFieldRulesAreComplete(t *testing.T) {
	for _, tc := range []struct {
		typ   reflect.Type
		rules map[string]fieldRule
	}{
		{reflect.TypeFor[batchv1.JobSpec](), jobSpecRules},
		{reflect.TypeFor[corev1.PodSpec](), podSpecRules},
		{reflect.TypeFor[corev1.Container](), containerRules},
		{reflect.TypeFor[corev1.EnvVar](), envVarRules},
	} {
		fields := map[string]bool{}
		for i := range tc.typ.NumField() {
			name := tc.typ.Field(i).Name
			fields[name] = true
			if _, ok := tc.rules[name]; !ok {
				t.Errorf("%s.%s has no rule", tc.typ, name)
			}
		}
		for name := range tc.rules {
			if !fields[name] {
				t.Errorf("the rule for %s.%s names no field", tc.typ, name)
			}
		}
	}
}

func TestJobProcessRefusesUnknownFields(t *testing.T) {
	type spec struct {
		Known  string `json:"known"`
		Future *bool  `json:"future,omitempty"`
	}
	rules := map[string]fieldRule{"Known": ignored}
	if err := checkFields("x", &spec{Known: "k"}, rules); err != nil {
		t.Fatal(err)
	}
	err := checkFields("x", &spec{Future: ptr(true)}, rules)
	var se *JobSpecError
	if !errors.As(err, &se) || se.Field != "x.future" {
		t.Fatalf("error = %v", err)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
	// Cases from the kubelet's expansion tests.
	for _, tc := range []struct{ in, want string }{
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_A)", "A-A"},
		{"$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"},
		{"$(VAR_REF)", "$(VAR_A)"}, // not expanded twice
		{"$(VAR_EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(VAR_A)", "$(VAR_A)"},
		{"$$$(VAR_A)", "$A"},
		{"$$$$(VAR_A)", "$$(VAR_A)"},
		{"$(VAR_A", "$(VAR_A"},
		{"$VAR_A", "$VAR_A"},
		{"$", "$"},
		{"$(", "$("},
		{"$()", "$()"},
		{"f00__(VAR_A)__", "f00__(VAR_A)__"},
		{"$(VAR_A)__$", "A__$"},
		{"héllo $(VAR_A) $é", "héllo A $é"},
	} {
		if got := expand(tc.in, vars); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJobMeasurement(t *testing.T) {
	startedAt := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	running := rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseRunning, StartedAt: &startedAt,
		ResumeAt: &startedAt, Metadata: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		code    int
		err     error
		phase   rolloutsapi.AnalysisPhase
		message string
	}{
		{0, nil, rolloutsapi.AnalysisPhaseSuccessful, ""},
		{1, nil, rolloutsapi.AnalysisPhaseFailed, "the process exited with code 1"},
		{137, nil, rolloutsapi.AnalysisPhaseFailed, "the process exited with code 137"},
		{-1, nil, rolloutsapi.AnalysisPhaseFailed, "the process was killed"},
		{0, errors.New(`exec: "curl": executable file not found in $PATH`), rolloutsapi.AnalysisPhaseError, `exec: "curl": executable file not found in $PATH`},
	} {
		m := JobMeasurement(running, tc.code, tc.err)
		if m.Phase != tc.phase || m.Message != tc.message || m.Value != "" {
			t.Errorf("JobMeasurement(%d, %v) = %s %q %q, want %s %q", tc.code, tc.err, m.Phase, m.Message, m.Value, tc.phase, tc.message)
		}
		if m.StartedAt == nil || !m.StartedAt.Equal(&startedAt) || m.FinishedAt == nil || m.FinishedAt.Before(&startedAt) {
			t.Errorf("JobMeasurement(%d, %v): started %v finished %v", tc.code, tc.err, m.StartedAt, m.FinishedAt)
		}
		if m.Metadata["k"] != "v" {
			t.Errorf("metadata lost: %v", m.Metadata)
		}
	}
	if m := JobMeasurement(rolloutsapi.Measurement{}, 0, nil); m.StartedAt == nil || m.FinishedAt == nil {
		t.Fatalf("a measurement without a start: %+v", m)
	}
	if running.FinishedAt != nil || running.Phase != rolloutsapi.AnalysisPhaseRunning {
		t.Fatal("the measurement passed was changed")
	}
}
