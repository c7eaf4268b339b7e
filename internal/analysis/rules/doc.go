// Package rules holds Argo Rollouts' rules for its analysis kinds
// (argoproj.io/v1alpha1, as Rollouts v1.10.2 has them) as pure functions,
// for the managers that apply them (and the analysis runner to come):
//
//   - args.go: a metric's {{args.name}} placeholders resolved as Rollouts
//     resolves them;
//   - validate.go: what Rollouts' analysis controller refuses to run
//     ("Analysis spec invalid: ..."), with its messages.
//
// Nothing here talks to Kubernetes.
package rules
