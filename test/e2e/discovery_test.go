package e2e

import (
	"strings"
	"testing"
)

// Discovery lists the core group's namespaces, as kubectl sees it.
func TestKubectlAPIResourcesListsNamespaces(t *testing.T) {
	k := newKubectl(t)
	out := k.must("", "api-resources", "--no-headers")
	var ns, ta bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		ns = ns || (len(f) == 5 && f[0] == "namespaces" && f[1] == "ns" && f[2] == "v1" && f[3] == "false" && f[4] == "Namespace")
		ta = ta || (len(f) >= 4 && f[0] == "taskactions" && strings.HasPrefix(f[len(f)-3], "flyte.org/v1"))
	}
	if !ns || !ta {
		t.Errorf("kubectl api-resources: namespaces %v, taskactions %v:\n%s", ns, ta, out)
	}
	if out := k.must("", "get", "namespace", "flyte", "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Errorf("kubectl get namespace flyte: %q", out)
	}
	if out := k.must("", "create", "namespace", "team-a"); !strings.Contains(out, "namespace/team-a created") {
		t.Errorf("kubectl create namespace: %q", out)
	}
}
