package providers

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
)

// Process is what a job metric runs in place of Rollouts' Kubernetes Job:
// its one container as a local process of the server's process plugin.
// The image is not pulled: the command runs from the server's own file
// system (looked up on its PATH), as the server's user, in the action's
// output directory, with the server's network and name resolution.
type Process struct {
	// Argv is the container's command followed by its args (the process
	// plugin's container.command), each with $(VAR) references to the
	// container's env expanded as the kubelet expands them: a defined
	// VAR is replaced, an undefined one left as "$(VAR)", "$$" is "$".
	Argv []string
	// Env is the container's env: each variable's value, its $(VAR)
	// references expanded over the variables before it as the kubelet
	// does; of two of the same name, the later wins. Nothing else of the
	// pod's environment (service links, the service-account token, the
	// image's ENV) is there.
	Env map[string]string
	// Retries is how many times a failed process is started again before
	// the job has failed: the Job's backoffLimit, Kubernetes' 6 when
	// unset (a Job fails when more than backoffLimit pods failed).
	Retries int
	// Deadline bounds the whole job, retries included: the Job's
	// activeDeadlineSeconds, 0 for none. Past it, Kubernetes kills the pod
	// and fails the Job; the runner kills the process and reports a
	// failed exit (see JobMeasurement).
	Deadline time.Duration
	// Image and Container are the container's image and name, for
	// messages only.
	Image, Container string
}

// DefaultBackoffLimit is Kubernetes' backoffLimit of a Job without one.
const DefaultBackoffLimit = 6

// JobSpecError is a job metric's spec that JobProcess cannot map to a
// process: Field is the path in the metric's job (spec.template.spec...),
// Reason why.
type JobSpecError struct {
	Field, Reason string
}

func (e *JobSpecError) Error() string {
	return "job metric cannot run as a process: " + e.Field + ": " + e.Reason
}

// JobProcess maps a job metric's Job (m.Provider.Job) to the Process that
// runs it here. The mapping, field by field:
//
//   - spec.template.spec.containers: exactly one. Its command and args
//     give Argv (command is required: the image is not pulled, so its
//     entrypoint is unknown); its env gives Env, values only: valueFrom
//     (Secrets, ConfigMaps, fields, resources, files) and envFrom are
//     refused, and so are names the process plugin reserves or cannot
//     pass (v1.EnvVarProblem).
//   - restartPolicy must be OnFailure or Never, as Kubernetes requires of
//     a Job; either way a failed process is run again, up to Retries
//     (spec.backoffLimit, DefaultBackoffLimit when unset) times.
//   - spec.activeDeadlineSeconds is Deadline.
//   - spec.parallelism and spec.completions must be unset or 1,
//     completionMode unset or NonIndexed, suspend not true, managedBy unset
//     or kubernetes.io/job-controller.
//   - Refused when set, since the process could not honor them: on the
//     container, workingDir (the process runs in the action's output
//     directory), volumeMounts, volumeDevices, securityContext, lifecycle,
//     livenessProbe, startupProbe, restartPolicy, restartPolicyRules,
//     stdin, stdinOnce, tty; on the pod, initContainers,
//     ephemeralContainers, volumes, securityContext, hostUsers: false,
//     runtimeClassName, activeDeadlineSeconds (use the Job's), hostname,
//     subdomain, setHostnameAsFQDN, hostnameOverride, hostAliases,
//     dnsConfig, resourceClaims; on the Job, podFailurePolicy,
//     successPolicy, backoffLimitPerIndex, maxFailedIndexes. An empty
//     securityContext ({}) asks nothing and is accepted.
//   - Ignored, having no meaning for a local process: resources (pod and
//     container; the process has no limits of its own), resizePolicy,
//     image (see Process), imagePullPolicy, imagePullSecrets, ports,
//     readinessProbe, terminationMessagePath/Policy,
//     terminationGracePeriodSeconds, the scheduling fields (nodeSelector,
//     nodeName, affinity, tolerations, priority, priorityClassName,
//     preemptionPolicy, schedulerName, schedulingGates, schedulingGroup,
//     topologySpreadConstraints, readinessGates, overhead, os,
//     evictionResponders), serviceAccountName, serviceAccount,
//     automountServiceAccountToken (the process gets no token), dnsPolicy,
//     enableServiceLinks, hostNetwork, hostPID, hostIPC,
//     shareProcessNamespace (it runs in the server's namespaces), and on
//     the Job, selector, manualSelector, ttlSecondsAfterFinished,
//     podReplacementPolicy, scheduling; all metadata.
//
// Any field this list does not name (one a later Kubernetes adds) is
// refused when set. Every error is a *JobSpecError.
func JobProcess(m rolloutsapi.Metric) (Process, error) {
	job := m.Provider.Job
	if job == nil {
		return Process{}, &JobSpecError{Field: "provider.job", Reason: "the metric has no job provider"}
	}
	spec := &job.Spec
	if err := checkFields("spec", spec, jobSpecRules); err != nil {
		return Process{}, err
	}
	var p Process
	if v := spec.Parallelism; v != nil && *v != 1 {
		return Process{}, &JobSpecError{"spec.parallelism", "must be 1: the job runs one process at a time"}
	}
	if v := spec.Completions; v != nil && *v != 1 {
		return Process{}, &JobSpecError{"spec.completions", "must be 1: the job runs one process to completion"}
	}
	if v := spec.CompletionMode; v != nil && *v != batchv1.NonIndexedCompletion {
		return Process{}, &JobSpecError{"spec.completionMode", "must be NonIndexed: the job runs one process to completion"}
	}
	if v := spec.ManagedBy; v != nil && *v != batchv1.JobControllerName {
		return Process{}, &JobSpecError{"spec.managedBy", "the job is run by this server, not by " + strconv.Quote(*v)}
	}
	p.Retries = DefaultBackoffLimit
	if v := spec.BackoffLimit; v != nil {
		if *v < 0 {
			return Process{}, &JobSpecError{"spec.backoffLimit", "must be greater than or equal to 0"}
		}
		p.Retries = int(*v)
	}
	if v := spec.ActiveDeadlineSeconds; v != nil {
		if *v <= 0 {
			return Process{}, &JobSpecError{"spec.activeDeadlineSeconds", "must be greater than 0"}
		}
		p.Deadline = time.Duration(*v) * time.Second
	}

	pod := &spec.Template.Spec
	if err := checkFields("spec.template.spec", pod, podSpecRules); err != nil {
		return Process{}, err
	}
	switch pod.RestartPolicy {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		return Process{}, &JobSpecError{"spec.template.spec.restartPolicy", `Required value: valid values: "OnFailure", "Never"`}
	default:
		return Process{}, &JobSpecError{"spec.template.spec.restartPolicy", fmt.Sprintf(`Unsupported value: %q: supported values: "OnFailure", "Never"`, pod.RestartPolicy)}
	}
	if v := pod.HostUsers; v != nil && !*v {
		return Process{}, &JobSpecError{"spec.template.spec.hostUsers", "a user namespace cannot be given: the process runs as the server's user"}
	}
	switch n := len(pod.Containers); {
	case n == 0:
		return Process{}, &JobSpecError{"spec.template.spec.containers", "Required value: the job needs one container"}
	case n > 1:
		return Process{}, &JobSpecError{"spec.template.spec.containers", fmt.Sprintf("has %d containers: only one can run, as one process", n)}
	}

	c := &pod.Containers[0]
	path := "spec.template.spec.containers[0]"
	if err := checkFields(path, c, containerRules); err != nil {
		return Process{}, err
	}
	if len(c.Command) == 0 {
		return Process{}, &JobSpecError{path + ".command", "Required value: the image is not pulled, so its entrypoint is unknown: give the command"}
	}
	p.Env = map[string]string{}
	for i := range c.Env {
		e := &c.Env[i]
		at := fmt.Sprintf("%s.env[%d]", path, i)
		if err := checkFields(at, e, envVarRules); err != nil {
			return Process{}, err
		}
		if problem := v1.EnvVarProblem(e.Name, e.Value); problem != "" {
			return Process{}, &JobSpecError{at, strconv.Quote(e.Name) + ": " + problem}
		}
		value := e.Value
		if value != "" {
			value = expand(value, p.Env)
		}
		p.Env[e.Name] = value
	}
	for _, s := range append(append([]string(nil), c.Command...), c.Args...) {
		p.Argv = append(p.Argv, expand(s, p.Env))
	}
	p.Image, p.Container = c.Image, c.Name
	return p, nil
}

// A fieldRule is what JobProcess does with a field of a Job, pod or
// container spec: ignore it, check it itself (handled), or refuse it when
// set, saying why.
type fieldRule struct {
	handled bool
	refused string
}

var (
	ignored = fieldRule{}
	handled = fieldRule{handled: true}
)

func refused(why string) fieldRule { return fieldRule{refused: why} }

const (
	notInPod       = "the job runs as a local process of the server, not in a pod"
	noSecurity     = "the process runs as the server's user, without a container's isolation, so a security context cannot be honored"
	noNames        = "the process has the server's host name and name resolution"
	noPolicies     = "the job runs one process, retried up to backoffLimit times"
	noStdinOrTerm  = "the process has no standard input nor terminal"
	noExtraRunning = "only the container's command runs"
)

// jobSpecRules, podSpecRules, containerRules and envVarRules name every
// field of batch/v1 JobSpec, core/v1 PodSpec, Container and EnvVar, by Go
// name (the tests check that they do).
var jobSpecRules = map[string]fieldRule{
	"Parallelism":             handled,
	"Completions":             handled,
	"ActiveDeadlineSeconds":   handled,
	"PodFailurePolicy":        refused(noPolicies),
	"SuccessPolicy":           refused(noPolicies),
	"BackoffLimit":            handled,
	"BackoffLimitPerIndex":    refused(noPolicies),
	"MaxFailedIndexes":        refused(noPolicies),
	"Selector":                ignored,
	"ManualSelector":          ignored,
	"Template":                handled,
	"TTLSecondsAfterFinished": ignored,
	"CompletionMode":          handled,
	"Suspend":                 refused("a suspended job would never run"),
	"PodReplacementPolicy":    ignored,
	"ManagedBy":               handled,
	"Scheduling":              ignored,
}

var podSpecRules = map[string]fieldRule{
	"Volumes":                       refused("volumes cannot be mounted: " + notInPod),
	"InitContainers":                refused("init containers are not run: " + noExtraRunning),
	"Containers":                    handled,
	"EphemeralContainers":           refused(noExtraRunning),
	"RestartPolicy":                 handled,
	"TerminationGracePeriodSeconds": ignored,
	"ActiveDeadlineSeconds":         refused("a deadline per pod is not supported: set the Job's spec.activeDeadlineSeconds"),
	"DNSPolicy":                     ignored,
	"NodeSelector":                  ignored,
	"ServiceAccountName":            ignored,
	"DeprecatedServiceAccount":      ignored,
	"AutomountServiceAccountToken":  ignored,
	"NodeName":                      ignored,
	"HostNetwork":                   ignored,
	"HostPID":                       ignored,
	"HostIPC":                       ignored,
	"ShareProcessNamespace":         ignored,
	"SecurityContext":               refused(noSecurity),
	"ImagePullSecrets":              ignored,
	"Hostname":                      refused(noNames),
	"Subdomain":                     refused(noNames),
	"Affinity":                      ignored,
	"SchedulerName":                 ignored,
	"Tolerations":                   ignored,
	"HostAliases":                   refused(noNames),
	"PriorityClassName":             ignored,
	"Priority":                      ignored,
	"DNSConfig":                     refused(noNames),
	"ReadinessGates":                ignored,
	"RuntimeClassName":              refused("a container runtime cannot be chosen: " + notInPod),
	"EnableServiceLinks":            ignored,
	"PreemptionPolicy":              ignored,
	"Overhead":                      ignored,
	"TopologySpreadConstraints":     ignored,
	"SetHostnameAsFQDN":             refused(noNames),
	"OS":                            ignored,
	"HostUsers":                     handled,
	"SchedulingGates":               ignored,
	"ResourceClaims":                refused("resources cannot be claimed: " + notInPod),
	"Resources":                     ignored,
	"HostnameOverride":              refused(noNames),
	"SchedulingGroup":               ignored,
	"EvictionResponders":            ignored,
}

var containerRules = map[string]fieldRule{
	"Name":                     handled,
	"Image":                    handled,
	"Command":                  handled,
	"Args":                     handled,
	"WorkingDir":               refused("the process runs in the action's output directory"),
	"Ports":                    ignored,
	"EnvFrom":                  refused("only env values given inline can be passed to the process"),
	"Env":                      handled,
	"Resources":                ignored,
	"ResizePolicy":             ignored,
	"RestartPolicy":            refused("a container restart policy is not supported: " + noPolicies),
	"RestartPolicyRules":       refused("a container restart policy is not supported: " + noPolicies),
	"VolumeMounts":             refused("volumes cannot be mounted: " + notInPod),
	"VolumeDevices":            refused("devices cannot be mounted: " + notInPod),
	"LivenessProbe":            refused("probes are not run: " + noExtraRunning),
	"ReadinessProbe":           ignored,
	"StartupProbe":             refused("probes are not run: " + noExtraRunning),
	"Lifecycle":                refused("lifecycle hooks are not run: " + noExtraRunning),
	"TerminationMessagePath":   ignored,
	"TerminationMessagePolicy": ignored,
	"ImagePullPolicy":          ignored,
	"SecurityContext":          refused(noSecurity),
	"Stdin":                    refused(noStdinOrTerm),
	"StdinOnce":                refused(noStdinOrTerm),
	"TTY":                      refused(noStdinOrTerm),
}

var envVarRules = map[string]fieldRule{
	"Name":      handled,
	"Value":     handled,
	"ValueFrom": refused("only env values given inline can be passed to the process (no Secret, ConfigMap, field, resource or file references)"),
}

// checkFields refuses the fields of the struct *v that are set and that
// rules refuse or does not name; the error's field is path.json-name.
func checkFields(path string, v any, rules map[string]fieldRule) error {
	rv := reflect.ValueOf(v).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		rule, known := rules[f.Name]
		if !known {
			rule = refused("not supported")
		}
		if rule.refused == "" || !isSet(rv.Field(i)) {
			continue
		}
		return &JobSpecError{Field: path + "." + jsonName(f), Reason: rule.refused}
	}
	return nil
}

// isSet says whether a field asks for something: not nil, not empty, not
// a pointer to a zero value (false, 0, "", {}).
func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && isSet(v.Elem())
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	case reflect.Struct:
		for i := range v.NumField() {
			if isSet(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return !v.IsZero()
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// JobMeasurement completes a job metric's measurement m (the one started
// when the process was, Phase Running; StartedAt is set if m has none)
// from how its process ended, as Rollouts' job provider completes one
// from its Job's conditions:
//
//   - startErr not nil (the process could not be started, or the server
//     could not run it): Error, with startErr as the message, as Rollouts
//     marks a Job it could not create;
//   - exitCode 0 (the last attempt succeeded: the Job Complete):
//     Successful;
//   - any other exit code (the retries, if any, all failed, or Deadline
//     passed: the Job Failed): Failed, with the message "the process
//     exited with code N" ("the process was killed" for a negative code,
//     a process ended by a signal or the deadline).
//
// FinishedAt is set to now. Value stays empty, as in Rollouts.
func JobMeasurement(m rolloutsapi.Measurement, exitCode int, startErr error) rolloutsapi.Measurement {
	if m.StartedAt == nil {
		now := metav1.Now()
		m.StartedAt = &now
	}
	if startErr != nil {
		m.FinishedAt = nil
		return markError(m, startErr)
	}
	switch {
	case exitCode == 0:
		m.Phase = rolloutsapi.AnalysisPhaseSuccessful
		m.Message = ""
	case exitCode < 0:
		m.Phase = rolloutsapi.AnalysisPhaseFailed
		m.Message = "the process was killed"
	default:
		m.Phase = rolloutsapi.AnalysisPhaseFailed
		m.Message = "the process exited with code " + strconv.Itoa(exitCode)
	}
	return finish(m)
}
