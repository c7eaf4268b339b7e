// Package v1 holds the TaskAction custom resource (flyte.org/v1).
//
// Field names and JSON tags follow the TaskAction CRD of the system this
// product is modelled on, so objects written by that system read back
// unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=flyte.org
// +groupGoName=Flyte
package v1
