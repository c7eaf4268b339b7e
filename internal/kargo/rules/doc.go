// Package rules holds Kargo's rules (kargo.akuity.io/v1alpha1, as Kargo
// v1.6 has them) as pure functions, for the managers, controllers and
// admission plugin that apply them:
//
//   - validate.go, defaults.go: what Kargo's Stage webhooks and CRD reject
//     and default;
//   - freight.go: Freight IDs, and the Freight webhooks' defaulting and
//     validation;
//   - warehouse.go: the Warehouse webhooks' defaulting and validation;
//   - projectconfig.go: the ProjectConfig webhook's validation;
//   - autopromotion.go: which Freight the Stage controller promotes with
//     no one asking, as a project's ProjectConfig allows;
//   - builder.go: the Promotion builder (names, vars, steps), the Promotion
//     webhook's update rule and the promotion API's messages;
//   - queue.go: the order of a Stage's Promotions;
//   - status*.go: the Stage controller's status computation (Promotions,
//     health, verification, the conditions' summary) and the Freight it
//     marks verified.
//
// Nothing here talks to Kubernetes. The rules between promotion steps are
// package engine's.
package rules
