package webhooks

import (
	"fmt"
	"testing"

	"k8s.io/apiserver/pkg/admission"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

const projectConfigDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: ProjectConfig
metadata: {name: %s, namespace: kargo-demo}
spec:
  promotionPolicies:
  - stageSelector: {name: test}
    autoPromotionEnabled: true
  - stage: %s
`

// A ProjectConfig write gets Kargo's errors: a name not the project's on
// create only, and a Stage given two policies on either.
func TestValidateProjectConfig(t *testing.T) {
	tests := []struct {
		name, cfgName, second string
		op                    admission.Operation
		want                  string
	}{
		{"valid", "kargo-demo", "uat", admission.Create, ""},
		{"named after another project", "other", "uat", admission.Create,
			`metadata.name: Invalid value: "other": name "other" must match project name "kargo-demo"`},
		{"the name is not checked on update", "other", "uat", admission.Update, ""},
		{"a Stage twice", "kargo-demo", "test", admission.Update,
			`spec.promotionPolicies[1]: Invalid value: "test": stage name already defined at spec.promotionPolicies[0]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, fmt.Sprintf(projectConfigDoc, tc.cfgName, tc.second))
			err := NewAdmission().Validate(t.Context(), request(u, u, kargoapi.ProjectConfigPlural, "", tc.op), nil)
			checkInvalid(t, err, "ProjectConfig", tc.want)
		})
	}
}
