package controlplane

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
)

// FieldManager is the name this server's own writes carry in
// managedFields: the user agent of the client the embedded control plane
// hands out (RESTConfig).
const FieldManager = "taskactions"

// ownFieldsAdmission drops the managedFields entry of this server's own
// writes before they are stored. The API server tracks field ownership on
// every write, for server-side apply; this server never applies, and the
// entry of its status writes was about 40% of a stored TaskAction: the API
// server decodes (twice, through its schema coercer), re-encodes and sends
// it with every object, and a restart with 10,000 live actions spent a
// third of its time on it. Entries of other managers (kubectl, Flyte,
// Kargo) are kept, so their server-side applies keep their ownership; a
// field this server last wrote is then owned by no one, which an apply
// takes over without a conflict.
//
// It runs after the API server's field manager (mutating admission always
// does), on every write of every resource of the embedded control plane,
// including the status subresource.
type ownFieldsAdmission struct {
	*admission.Handler
	manager string
}

var _ admission.MutationInterface = (*ownFieldsAdmission)(nil)

func newOwnFieldsAdmission(manager string) *ownFieldsAdmission {
	return &ownFieldsAdmission{Handler: admission.NewHandler(admission.Create, admission.Update), manager: manager}
}

func (o *ownFieldsAdmission) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil
	}
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return nil
	}
	entries, ok := meta["managedFields"].([]any)
	if !ok {
		return nil
	}
	kept := entries[:0]
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["manager"] == o.manager {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		delete(meta, "managedFields")
	} else {
		meta["managedFields"] = kept
	}
	return nil
}
