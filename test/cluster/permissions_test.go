package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"taskactions/test/cluster"
)

// readyTimeout bounds a server's start on the test cluster; one that
// cannot list what it serves never becomes ready.
const readyTimeout = 10 * time.Second

// startChartServer starts a server as the chart's ServiceAccount with the
// chart's arguments and extra ones; it stops when the test ends.
func startChartServer(t testing.TB, extra ...string) *cluster.Server {
	t.Helper()
	ctx := t.Context()
	kubeconfig, err := kube.ServiceAccountKubeconfig(ctx, releaseNamespace, releaseName)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cluster.StartServer(ctx, serverBin, t.TempDir(), kubeconfig, readyTimeout, append(chartArgs(t), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestTheChartServesEveryFeature runs the server as the chart's
// ServiceAccount, with the chart's arguments, and uses every feature.
func TestTheChartServesEveryFeature(t *testing.T) {
	ctx := t.Context()
	s := startChartServer(t)
	if broken, err := runFeatures(ctx, s, "full", releaseNamespace); broken != "" {
		t.Fatalf("%s: %v\nserver log:\n%s", broken, err, s.Log())
	}
	lease, err := kube.Kube.CoordinationV1().Leases(releaseNamespace).Get(ctx, "taskactions-executor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the executor's Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("the executor's Lease has no holder: %+v", lease.Spec)
	}
}

// permission is one verb on one resource, as a Role grants it.
type permission struct {
	clusterWide bool // from the ClusterRole, else the Role
	group       string
	resource    string
	verb        string
}

func (p permission) String() string {
	return p.verb + " " + strings.TrimPrefix(p.group+"/"+p.resource, "/")
}

// needs names, for every permission the chart grants, the feature that
// breaks without it. "start" is the server's start: without it the server
// never becomes ready. Where two features need a permission only on a
// race (a cache a version behind), either may be the first to break.
var needs = map[string][]string{
	"get apiextensions.k8s.io/customresourcedefinitions": {"start"},
	"get namespaces":                                   {"create a Stage"},
	"create namespaces":                                {"enqueue an action (its namespace is created)"},
	"get flyte.org/taskactions":                        {"abort a running action", "report an outside executor's status while others edit the action"},
	"list flyte.org/taskactions":                       {"start"},
	"watch flyte.org/taskactions":                      {"start"},
	"create flyte.org/taskactions":                     {"enqueue an action (its namespace is created)"},
	"update flyte.org/taskactions":                     {"delete a run (the cluster's garbage collector takes the children)"},
	"patch flyte.org/taskactions":                      {"abort a running action"},
	"delete flyte.org/taskactions":                     {"abort a running action", "delete a run (the cluster's garbage collector takes the children)"},
	"update flyte.org/taskactions/status":              {"execute an action"},
	"list kargo.akuity.io/stages":                      {"start"},
	"watch kargo.akuity.io/stages":                     {"start"},
	"create kargo.akuity.io/stages":                    {"create a Stage"},
	"update kargo.akuity.io/stages":                    {"replace a Stage"},
	"patch kargo.akuity.io/stages":                     {"refresh a Stage"},
	"delete kargo.akuity.io/stages":                    {"delete a Stage"},
	"update kargo.akuity.io/stages/finalizers":         {"promote Freight to a Stage"},
	"list kargo.akuity.io/promotions":                  {"start"},
	"watch kargo.akuity.io/promotions":                 {"start"},
	"create kargo.akuity.io/promotions":                {"promote Freight to a Stage"},
	"patch kargo.akuity.io/promotions":                 {"abort a Promotion"},
	"list kargo.akuity.io/freights":                    {"start"},
	"watch kargo.akuity.io/freights":                   {"start"},
	"create kargo.akuity.io/freights":                  {"create Freight"},
	"patch kargo.akuity.io/freights/status":            {"approve Freight for a Stage"},
	"list kargo.akuity.io/warehouses":                  {"start"},
	"watch kargo.akuity.io/warehouses":                 {"start"},
	"create kargo.akuity.io/warehouses":                {"create a Warehouse"},
	"update kargo.akuity.io/warehouses":                {"replace a Warehouse"},
	"patch kargo.akuity.io/warehouses":                 {"refresh a Warehouse"},
	"delete kargo.akuity.io/warehouses":                {"delete a Warehouse"},
	"list kargo.akuity.io/projectconfigs":              {"start"},
	"watch kargo.akuity.io/projectconfigs":             {"start"},
	"create kargo.akuity.io/projectconfigs":            {"put a ProjectConfig"},
	"update kargo.akuity.io/projectconfigs":            {"replace a ProjectConfig"},
	"delete kargo.akuity.io/projectconfigs":            {"delete a ProjectConfig"},
	"list argoproj.io/analysistemplates":               {"start"},
	"watch argoproj.io/analysistemplates":              {"start"},
	"create argoproj.io/analysistemplates":             {"create an AnalysisTemplate"},
	"update argoproj.io/analysistemplates":             {"replace an AnalysisTemplate"},
	"delete argoproj.io/analysistemplates":             {"delete an AnalysisTemplate"},
	"list argoproj.io/clusteranalysistemplates":        {"start"},
	"watch argoproj.io/clusteranalysistemplates":       {"start"},
	"create argoproj.io/clusteranalysistemplates":      {"create a ClusterAnalysisTemplate"},
	"update argoproj.io/clusteranalysistemplates":      {"replace a ClusterAnalysisTemplate"},
	"delete argoproj.io/clusteranalysistemplates":      {"delete a ClusterAnalysisTemplate"},
	"list argoproj.io/analysisruns":                    {"start"},
	"watch argoproj.io/analysisruns":                   {"start"},
	"create argoproj.io/analysisruns":                  {"create an AnalysisRun"},
	"delete argoproj.io/analysisruns":                  {"delete an AnalysisRun"},
	"get coordination.k8s.io/leases":                   {"execute an action"},
	"create coordination.k8s.io/leases":                {"execute an action"},
	"create authentication.k8s.io/tokenreviews":        {"read with a cluster user's token (TokenReview, SubjectAccessReview)"},
	"create authorization.k8s.io/subjectaccessreviews": {"read with a cluster user's token (TokenReview, SubjectAccessReview)"},
	"update coordination.k8s.io/leases":                {"keep the executor's Lease (renewed)"},
}

// TestEveryPermissionIsNeeded takes each permission of the chart's roles
// away in turn, runs the server with the rest, and checks that the feature
// named in needs breaks: the chart grants nothing the server does not use.
func TestEveryPermissionIsNeeded(t *testing.T) {
	ctx := t.Context()
	clusterRole, role := chartRoles(t)
	perms := append(permissionsOf(clusterRole.Rules, true), permissionsOf(role.Rules, false)...)
	for _, p := range perms {
		if _, ok := needs[p.String()]; !ok {
			t.Errorf("the chart grants %q, which needs does not name a feature for", p)
		}
	}
	for i, p := range perms {
		t.Run(p.String(), func(t *testing.T) {
			name := fmt.Sprintf("minus-%d", i)
			kubeconfig := grantAllBut(t, name, clusterRole, role, p)
			args := append(chartArgs(t), "--leader-election-namespace="+name)
			broken := "start"
			var err error
			s, err := cluster.StartServer(ctx, serverBin, t.TempDir(), kubeconfig, readyTimeout, args...)
			if err == nil {
				broken, err = runFeatures(ctx, s, name, name)
				_ = s.Stop()
			}
			t.Logf("without %s: %s breaks: %v", p, broken, err)
			if want := needs[p.String()]; !slices.Contains(want, broken) {
				t.Errorf("without %s, %q broke; want one of %q", p, broken, want)
			}
		})
	}
}

// grantAllBut creates ServiceAccount name in namespace name with the
// chart's roles less p (the Role's in namespace name, which then holds the
// Lease) and returns a kubeconfig for it.
func grantAllBut(t *testing.T, name string, clusterRole *rbacv1.ClusterRole, role *rbacv1.Role, p permission) string {
	t.Helper()
	ctx := t.Context()
	if err := kube.EnsureNamespace(ctx, name); err != nil {
		t.Fatal(err)
	}
	rbac := kube.Kube.RbacV1()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "taskactions", Namespace: name}}
	if _, err := kube.Kube.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "taskactions", Namespace: name}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: without(clusterRole.Rules, p, true)}
	if _, err := rbac.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}, Rules: without(role.Rules, p, false)}
	if _, err := rbac.Roles(name).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := rbac.RoleBindings(name).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := kube.ServiceAccountKubeconfig(ctx, name, "taskactions")
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// permissionsOf expands rules into one permission per group, resource and
// verb.
func permissionsOf(rules []rbacv1.PolicyRule, clusterWide bool) []permission {
	var out []permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, permission{clusterWide, g, res, v})
				}
			}
		}
	}
	return out
}

// without is rules less permission p (rules of the other role unchanged).
func without(rules []rbacv1.PolicyRule, p permission, clusterWide bool) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if p.clusterWide != clusterWide || !slices.Contains(r.APIGroups, p.group) || !slices.Contains(r.Resources, p.resource) || !slices.Contains(r.Verbs, p.verb) {
			out = append(out, r)
			continue
		}
		// Split the rule so that only p goes.
		for _, res := range r.Resources {
			verbs := r.Verbs
			if res == p.resource {
				verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == p.verb })
			}
			if len(verbs) > 0 {
				out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{res}, Verbs: verbs})
			}
		}
	}
	return out
}

// documents splits the rendered chart into its objects' YAML.
func documents(manifest string) []string {
	var out []string
	for _, d := range strings.Split(manifest, "\n---") {
		if strings.TrimSpace(d) != "" {
			out = append(out, d)
		}
	}
	return out
}

// chartRoles returns the ClusterRole and the Role of the rendered chart.
func chartRoles(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	var cr *rbacv1.ClusterRole
	var r *rbacv1.Role
	for _, d := range documents(manifest) {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &kind); err != nil {
			t.Fatal(err)
		}
		switch kind.Kind {
		case "ClusterRole":
			cr = &rbacv1.ClusterRole{}
			mustUnmarshal(t, d, cr)
		case "Role":
			r = &rbacv1.Role{}
			mustUnmarshal(t, d, r)
		}
	}
	if cr == nil || r == nil {
		t.Fatal("the chart has no ClusterRole or no Role")
	}
	return cr, r
}

// chartArgs are the server's arguments in the chart's Deployment, less
// those that place it (listen addresses, data dir), which StartServer
// sets for a process on this machine.
func chartArgs(t testing.TB) []string {
	t.Helper()
	return argsOf(t, manifest)
}

func mustUnmarshal(t testing.TB, doc string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(doc), v); err != nil {
		t.Fatal(err)
	}
}

// TestChartLints: helm lint passes with the defaults, with the Kargo
// controllers on, with three replicas on PostgreSQL, and with both (the
// controllers run under their Lease); the chart refuses several replicas
// on SQLite.
func TestChartLints(t *testing.T) {
	ctx := t.Context()
	for _, set := range [][]string{nil, {"--set", "kargoControllers=true"}, {"--set", "replicaCount=3,history.dsnSecret.name=pg"},
		{"--set", "kargoControllers=true,replicaCount=3,history.dsnSecret.name=pg"}, {"--set", "grafanaDashboard.enabled=true"}} {
		if out, err := command(ctx, nil, helmBin, append([]string{"lint", "--strict", chartDir}, set...)...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", set, err, out)
		}
	}
	for set, want := range map[string]string{
		"replicaCount=2": "needs a shared history store",
	} {
		_, err := command(ctx, nil, helmBin, "template", "x", chartDir, "--set", set)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("helm template --set %s rendered (err %v); want it refused with %q", set, err, want)
		}
	}
}
