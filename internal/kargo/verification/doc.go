// Package verification verifies a Stage's Freight as Kargo does: it
// builds an Argo Rollouts AnalysisRun from the Stage's spec.verification
// (its AnalysisTemplates, its args evaluated with Kargo's expressions over
// the Freight), creates it, reads its result and terminates it on an
// abort. The Stage controller's rules (rules.Verifier) decide when; this
// package does it.
//
//   - flatten.go: several templates as one, and the Stage's args merged
//     into the templates' (Kargo's internal/rollouts);
//   - build.go: the AnalysisRun of a verification, named and labelled as
//     Kargo names and labels it;
//   - verifier.go: start, result and abort (Kargo's startVerification,
//     getVerificationResult, abortVerification).
//
// Who runs the AnalysisRun is not this package's concern: Argo Rollouts
// on a cluster that has it, this server's runner (package analysis/runner)
// elsewhere.
package verification
