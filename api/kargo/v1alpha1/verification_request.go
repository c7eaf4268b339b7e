package v1alpha1

import (
	"encoding/json"
	"strings"
)

// VerificationRequest is the value of a Stage's reverify and abort
// annotations (AnnotationKeyReverify, AnnotationKeyAbort): which
// VerificationInfo to re-verify or abort, and who asked. A request without
// an ID is no request.
//
// +k8s:deepcopy-gen=false
type VerificationRequest struct {
	// ID is the identifier of the VerificationInfo for which the request is
	// being made.
	ID string `json:"id,omitempty"`
	// Actor is the user who initiated the request.
	Actor string `json:"actor,omitempty"`
	// ControlPlane is a flag to indicate if the request has been initiated by
	// a control plane.
	ControlPlane bool `json:"controlPlane,omitempty"`
}

// ParseVerificationRequest reads an annotation's value as Kargo does
// (ReverifyAnnotationValue, AbortVerificationAnnotationValue): a JSON
// VerificationRequest, or a bare ID. Nil when the value names no ID or
// is JSON of another shape.
func ParseVerificationRequest(v string) *VerificationRequest {
	v = strings.TrimSpace(v)
	var r VerificationRequest
	if b := []byte(v); json.Valid(b) {
		if err := json.Unmarshal(b, &r); err != nil {
			return nil
		}
	} else {
		r.ID = v
	}
	if !r.HasID() {
		return nil
	}
	return &r
}

// HasID reports whether the request names a VerificationInfo.
func (r *VerificationRequest) HasID() bool { return r != nil && r.ID != "" }

// ForID reports whether the request is for the VerificationInfo id.
func (r *VerificationRequest) ForID(id string) bool { return r != nil && r.ID != "" && r.ID == id }

// String is the request as JSON, or "" when it names no ID.
func (r *VerificationRequest) String() string {
	if !r.HasID() {
		return ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		return ""
	}
	return string(b)
}
