// Package rules holds Argo Rollouts' rules for its analysis kinds
// (argoproj.io/v1alpha1, as Rollouts v1.10.2 has them) as pure functions,
// for the managers that apply them and the analysis runner:
//
//   - args.go: a metric's {{args.name}} placeholders resolved as Rollouts
//     resolves them;
//   - validate.go: what Rollouts' analysis controller refuses to run
//     ("Analysis spec invalid: ..."), with its messages;
//   - runspec.go: a run's spec as one pass of the controller reads it
//     (the first problem, dry-run metrics, measurement retention);
//   - schedule.go: Step, one pass of the controller over a run at a given
//     time (what to write, which measurements are due, when to look
//     again);
//   - assess.go: how the controller assesses a metric and the run from
//     the measurements, with its messages and summaries;
//   - measurements.go: a measurement started, reported, terminated and
//     trimmed, with the counters and the ordinal that names it;
//   - evaluate.go: a measured value's phase under the metric's
//     successCondition and failureCondition (expr-lang, with Rollouts'
//     functions).
//
// Nothing here talks to Kubernetes, starts a goroutine or reads a clock:
// the time is always a parameter.
package rules
