package rules

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func TestValidateProjectConfig(t *testing.T) {
	ref := corev1.LocalObjectReference{Name: "s"}
	cfg := func(name string, spec kargoapi.ProjectConfigSpec) *kargoapi.ProjectConfig {
		return &kargoapi.ProjectConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"}, Spec: spec}
	}
	policies := func(p ...kargoapi.PromotionPolicy) kargoapi.ProjectConfigSpec {
		return kargoapi.ProjectConfigSpec{PromotionPolicies: p}
	}
	tests := []struct {
		name   string
		cfg    *kargoapi.ProjectConfig
		create bool
		want   []string // "field: message" of each error, in order
	}{
		{"valid", cfg("demo", policies(byName("test", true), byName("glob:u*", true),
			kargoapi.PromotionPolicy{Stage: "prod"})), true, nil},
		{"named after another project, on create", cfg("other", policies()), true,
			[]string{`metadata.name: Invalid value: "other": name "other" must match project name "demo"`}},
		{"the name is not checked on update", cfg("other", policies()), false, nil},
		{"a Stage twice, by either field", cfg("demo", policies(byName("test", true), byName("uat", true),
			kargoapi.PromotionPolicy{Stage: "test"}, byName("test", false))), true,
			[]string{`spec.promotionPolicies[2]: Invalid value: "test": stage name already defined at spec.promotionPolicies[0]`,
				`spec.promotionPolicies[3]: Invalid value: "test": stage name already defined at spec.promotionPolicies[0]`}},
		{"a pattern twice is no duplicate", cfg("demo", policies(byName("glob:*", true), byName("glob:*", true))), true, nil},
		{"bad patterns", cfg("demo", policies(byName("regex:(", true), byName("glob:[", true), byName("re:x", true))), false,
			[]string{"spec.promotionPolicies[0].stageSelector.name: Invalid value: \"regex:(\": error parsing regexp: missing closing ): `(`",
				`spec.promotionPolicies[1].stageSelector.name: Invalid value: "glob:[": syntax error in pattern`,
				`spec.promotionPolicies[2].stageSelector.name: Invalid value: "re:x": invalid pattern identifier "re": must be "regex", "regexp" or "glob"`}},
		{"webhook receivers", cfg("demo", kargoapi.ProjectConfigSpec{WebhookReceivers: []kargoapi.WebhookReceiverConfig{
			{Name: "gh", GitHub: &kargoapi.GitHubWebhookReceiverConfig{SecretRef: ref}},
			{Name: "gh", GitLab: &kargoapi.GitLabWebhookReceiverConfig{SecretRef: ref}, Quay: &kargoapi.QuayWebhookReceiverConfig{SecretRef: ref}},
		}}), true, []string{
			`spec.webhookReceivers[1].name: Invalid value: "gh": webhook receiver name already defined at spec.webhookReceivers[0]`,
			`spec.webhookReceivers[1]: Forbidden: cannot define a receiver that is of more than one type, found 2: [GitLab Quay]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateProjectConfig(tt.cfg, tt.create) {
				got = append(got, strings.TrimSuffix(e.Error(), ": "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
