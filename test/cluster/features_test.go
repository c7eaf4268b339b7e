package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"taskactions/test/cluster"
)

// A feature is one thing a user does through the server, checked from
// outside: over HTTP, and on the cluster as its admin sees it.
type feature struct {
	name string
	run  func(f *features, ctx context.Context) error
}

// features walks a project through every feature the server has on a
// cluster; each step builds on the ones before it.
type features struct {
	s       *cluster.Server
	leaseNS string
	project string
	domain  string
	stage   map[string]any
	freight string
	promo   string
}

// featureList is in the order a user meets them. The permission test names
// the first of these that breaks when a permission is taken away.
var featureList = []feature{
	{"enqueue an action (its namespace is created)", (*features).enqueue},
	{"execute an action", (*features).execute},
	{"read with a cluster user's token (TokenReview, SubjectAccessReview)", (*features).clusterUser},
	{"enqueue and execute a child", (*features).child},
	{"abort a running action", (*features).abort},
	{"report an outside executor's status while others edit the action", (*features).outsideExecutor},
	{"delete a run (the cluster's garbage collector takes the children)", (*features).deleteRun},
	{"create a Stage", (*features).createStage},
	{"replace a Stage", (*features).replaceStage},
	{"refresh a Stage", (*features).refreshStage},
	{"create Freight", (*features).createFreight},
	{"approve Freight for a Stage", (*features).approveFreight},
	{"promote Freight to a Stage", (*features).promote},
	{"abort a Promotion", (*features).abortPromotion},
	{"delete a Stage", (*features).deleteStage},
	{"create a Warehouse", (*features).createWarehouse},
	{"replace a Warehouse", (*features).replaceWarehouse},
	{"refresh a Warehouse", (*features).refreshWarehouse},
	{"delete a Warehouse", (*features).deleteWarehouse},
	{"put a ProjectConfig", (*features).putProjectConfig},
	{"replace a ProjectConfig", (*features).replaceProjectConfig},
	{"delete a ProjectConfig", (*features).deleteProjectConfig},
	{"create an AnalysisTemplate", (*features).createAnalysisTemplate},
	{"replace an AnalysisTemplate", (*features).replaceAnalysisTemplate},
	{"delete an AnalysisTemplate", (*features).deleteAnalysisTemplate},
	{"create a ClusterAnalysisTemplate", (*features).createClusterAnalysisTemplate},
	{"replace a ClusterAnalysisTemplate", (*features).replaceClusterAnalysisTemplate},
	{"delete a ClusterAnalysisTemplate", (*features).deleteClusterAnalysisTemplate},
	{"create an AnalysisRun", (*features).createAnalysisRun},
	{"delete an AnalysisRun", (*features).deleteAnalysisRun},
	{"keep the executor's Lease (renewed)", (*features).leaseRenewed},
}

// runFeatures runs every feature in order against s and returns the name
// of the first that fails, with its error; "" if all work.
func runFeatures(ctx context.Context, s *cluster.Server, project, leaseNamespace string) (string, error) {
	f := &features{s: s, project: project, domain: "dev", leaseNS: leaseNamespace}
	for _, ft := range featureList {
		stepCtx, cancel := context.WithTimeout(ctx, featureTimeout)
		err := ft.run(f, stepCtx)
		cancel()
		if err != nil {
			return ft.name, err
		}
	}
	return "", nil
}

// featureTimeout bounds one feature: each takes well under a second when
// it works.
const featureTimeout = 15 * time.Second

var taskActionsGVR = schema.GroupVersionResource{Group: "flyte.org", Version: "v1", Resource: "taskactions"}

func (f *features) runPath(run string) string {
	return fmt.Sprintf("/api/v1/projects/%s/domains/%s/runs/%s", f.project, f.domain, run)
}

func (f *features) enqueueAction(ctx context.Context, run, name, parent, taskType string, custom map[string]any) error {
	template := map[string]any{"type": taskType}
	if custom != nil {
		template["custom"] = custom
	}
	return f.enqueueTemplate(ctx, run, name, parent, template)
}

// enqueueTemplate enqueues an action of a task template as the API takes it.
func (f *features) enqueueTemplate(ctx context.Context, run, name, parent string, template map[string]any) error {
	action := map[string]any{
		"actionId": map[string]any{"run": map[string]any{"project": f.project, "domain": f.domain, "name": run}, "name": name},
		"task":     map[string]any{"taskTemplate": template},
	}
	if parent != "" {
		action["parentActionName"] = parent
	}
	return f.s.DoJSON(ctx, http.MethodPost, "/api/v1/actions", map[string]any{"action": action}, nil, http.StatusCreated)
}

// waitPhase polls the action until it reads phase.
func (f *features) waitPhase(ctx context.Context, run, name, phase string) error {
	var last string
	for {
		var a struct{ Phase string }
		err := f.s.DoJSON(ctx, http.MethodGet, f.runPath(run)+"/actions/"+name, nil, &a, http.StatusOK)
		if err == nil && a.Phase == phase {
			return nil
		}
		last = a.Phase
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("action %s/%s never reached %s (last: %s)", run, name, phase, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (f *features) namespace() string { return f.project + "-" + f.domain }

func (f *features) enqueue(ctx context.Context) error {
	if err := f.enqueueAction(ctx, "r1", "a0", "", "echo", nil); err != nil {
		return err
	}
	_, err := kube.Kube.CoreV1().Namespaces().Get(ctx, f.namespace(), metav1.GetOptions{})
	return err
}

func (f *features) execute(ctx context.Context) error {
	return f.waitPhase(ctx, "r1", "a0", "SUCCEEDED")
}

func (f *features) child(ctx context.Context) error {
	if err := f.enqueueAction(ctx, "r1", "a1", "a0", "echo", nil); err != nil {
		return err
	}
	return f.waitPhase(ctx, "r1", "a1", "SUCCEEDED")
}

func (f *features) abort(ctx context.Context) error {
	if err := f.enqueueAction(ctx, "r2", "long", "", "sleep", map[string]any{"duration": "1h"}); err != nil {
		return err
	}
	if err := f.waitPhase(ctx, "r2", "long", "RUNNING"); err != nil {
		return err
	}
	path := f.runPath("r2") + "/actions/long/abort"
	if err := f.s.DoJSON(ctx, http.MethodPost, path, map[string]any{"reason": "test"}, nil, http.StatusAccepted); err != nil {
		return err
	}
	return f.waitPhase(ctx, "r2", "long", "ABORTED")
}

// deleteRun deletes run r1 and waits until no object of it is left: the
// server deletes the roots, the garbage collector the child. One root is
// a Kargo step (copy) outside a Promotion, which its plugin fails at once:
// it carries the executor's finalizer (echo's and sleep's actions carry
// none), which the executor must take off before the object can go.
func (f *features) deleteRun(ctx context.Context) error {
	if err := f.enqueueAction(ctx, "r1", "nobody", "", "copy", nil); err != nil {
		return err
	}
	if err := f.waitPhase(ctx, "r1", "nobody", "FAILED"); err != nil {
		return err
	}
	if err := f.s.DoJSON(ctx, http.MethodDelete, f.runPath("r1"), nil, nil, http.StatusAccepted); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(kube.Admin)
	if err != nil {
		return err
	}
	for {
		list, err := dyn.Resource(taskActionsGVR).Namespace(f.namespace()).List(ctx, metav1.ListOptions{LabelSelector: "flyte.org/run=r1"})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d objects of the deleted run are still there", len(list.Items))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (f *features) stagesPath() string { return "/api/v1/projects/" + f.project + "/stages" }

func (f *features) createStage(ctx context.Context) error {
	f.stage = map[string]any{
		"metadata": map[string]any{"name": "test"},
		"spec": map[string]any{
			"requestedFreight": []any{map[string]any{
				"origin": map[string]any{"kind": "Warehouse", "name": "w"}, "sources": map[string]any{"direct": true},
			}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": []any{map[string]any{"uses": "echo", "as": "e"}}}},
		},
	}
	return f.s.DoJSON(ctx, http.MethodPost, f.stagesPath(), f.stage, nil, http.StatusCreated)
}

func (f *features) replaceStage(ctx context.Context) error {
	var have struct {
		Metadata struct{ ResourceVersion string }
	}
	if err := f.s.DoJSON(ctx, http.MethodGet, f.stagesPath()+"/test", nil, &have, http.StatusOK); err != nil {
		return err
	}
	f.stage["metadata"].(map[string]any)["resourceVersion"] = have.Metadata.ResourceVersion
	f.stage["spec"].(map[string]any)["shard"] = "a"
	return f.s.DoJSON(ctx, http.MethodPut, f.stagesPath()+"/test", f.stage, nil, http.StatusOK)
}

func (f *features) refreshStage(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodPost, f.stagesPath()+"/test/refresh", nil, nil, http.StatusOK, http.StatusAccepted)
}

func (f *features) createFreight(ctx context.Context) error {
	body := map[string]any{
		"origin": map[string]any{"kind": "Warehouse", "name": "w"},
		"images": []any{map[string]any{"repoURL": "ghcr.io/example/app", "tag": "v1", "digest": "sha256:v1"}},
	}
	var out struct{ Metadata struct{ Name string } }
	if err := f.s.DoJSON(ctx, http.MethodPost, "/api/v1/projects/"+f.project+"/freight", body, &out, http.StatusCreated); err != nil {
		return err
	}
	f.freight = out.Metadata.Name
	return nil
}

func (f *features) approveFreight(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodPost, "/api/v1/projects/"+f.project+"/freight/"+f.freight+"/approve?stage=test", nil, nil, http.StatusOK)
}

func (f *features) promote(ctx context.Context) error {
	var out struct{ Metadata struct{ Name string } }
	body := map[string]any{"freight": f.freight}
	if err := f.s.DoJSON(ctx, http.MethodPost, f.stagesPath()+"/test/promotions", body, &out, http.StatusCreated); err != nil {
		return err
	}
	f.promo = out.Metadata.Name
	return nil
}

func (f *features) abortPromotion(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodPost, "/api/v1/projects/"+f.project+"/promotions/"+f.promo+"/abort", nil, nil, http.StatusOK)
}

func (f *features) deleteStage(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.stagesPath()+"/test", nil, nil, http.StatusOK, http.StatusNoContent, http.StatusAccepted)
}

func (f *features) warehousesPath() string { return "/api/v1/projects/" + f.project + "/warehouses" }

func (f *features) createWarehouse(ctx context.Context) error {
	body := map[string]any{
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"subscriptions": []any{map[string]any{"image": map[string]any{"repoURL": "registry.invalid/app"}}}},
	}
	return f.s.DoJSON(ctx, http.MethodPost, f.warehousesPath(), body, nil, http.StatusCreated)
}

func (f *features) replaceWarehouse(ctx context.Context) error {
	var have map[string]any
	if err := f.s.DoJSON(ctx, http.MethodGet, f.warehousesPath()+"/w", nil, &have, http.StatusOK); err != nil {
		return err
	}
	have["spec"].(map[string]any)["shard"] = "a"
	return f.s.DoJSON(ctx, http.MethodPut, f.warehousesPath()+"/w", have, nil, http.StatusOK)
}

func (f *features) refreshWarehouse(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodPost, f.warehousesPath()+"/w/refresh", nil, nil, http.StatusOK)
}

func (f *features) deleteWarehouse(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.warehousesPath()+"/w", nil, nil, http.StatusNoContent)
}

func (f *features) configPath() string { return "/api/v1/projects/" + f.project + "/config" }

func (f *features) putProjectConfig(ctx context.Context) error {
	body := map[string]any{"spec": map[string]any{"promotionPolicies": []any{
		map[string]any{"stageSelector": map[string]any{"name": "test"}, "autoPromotionEnabled": true},
	}}}
	return f.s.DoJSON(ctx, http.MethodPut, f.configPath(), body, nil, http.StatusCreated)
}

func (f *features) replaceProjectConfig(ctx context.Context) error {
	var have map[string]any
	if err := f.s.DoJSON(ctx, http.MethodGet, f.configPath(), nil, &have, http.StatusOK); err != nil {
		return err
	}
	have["spec"] = map[string]any{}
	return f.s.DoJSON(ctx, http.MethodPut, f.configPath(), have, nil, http.StatusOK)
}

func (f *features) deleteProjectConfig(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.configPath(), nil, nil, http.StatusNoContent)
}

// outsideExecutor reports statuses of an action no plugin here runs, as
// an executor outside would, while another client (a controller, kubectl)
// edits the same object between the reports: the server's cache is then
// often a version behind, the write conflicts, and the server must read
// the object again to retry it.
func (f *features) outsideExecutor(ctx context.Context) error {
	if err := f.enqueueAction(ctx, "r3", "ext", "", "external", nil); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(kube.Admin)
	if err != nil {
		return err
	}
	objects := dyn.Resource(taskActionsGVR).Namespace(f.namespace())
	list, err := objects.List(ctx, metav1.ListOptions{LabelSelector: "flyte.org/run=r3"})
	if err != nil || len(list.Items) != 1 {
		return fmt.Errorf("the outside action's object: %v (%d found)", err, len(list.Items))
	}
	name := list.Items[0].GetName()
	path := f.runPath("r3") + "/actions/ext/status"
	for i := range 30 {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"test.example/edit":"%d"}}}`, i)
		if _, err := objects.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		phase := "RUNNING"
		if i == 29 {
			phase = "SUCCEEDED"
		}
		body := map[string]any{"attempt": 1, "status": map[string]any{"phase": phase, "message": fmt.Sprintf("report %d", i)}}
		if err := f.s.DoJSON(ctx, http.MethodPut, path, body, nil, http.StatusOK); err != nil {
			return fmt.Errorf("report %d: %w", i, err)
		}
	}
	return nil
}

// leaseRenewed waits for the executor's Lease to be renewed after it was
// acquired (every 2 s while held).
func (f *features) leaseRenewed(ctx context.Context) error {
	for {
		lease, err := kube.Kube.CoordinationV1().Leases(f.leaseNS).Get(ctx, "taskactions-executor", metav1.GetOptions{})
		if err == nil && lease.Spec.AcquireTime != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(lease.Spec.AcquireTime.Time) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the executor's Lease was not renewed (last read: %v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusterUser reads an action with a token the server does not know (the
// cluster's admin's): the cluster reviews the token and the request.
func (f *features) clusterUser(ctx context.Context) error {
	status, body, err := f.s.DoAs(ctx, kube.Admin.BearerToken, http.MethodGet, f.runPath("r1")+"/actions/a0", nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET with the cluster admin's token: %d %s", status, body)
	}
	return nil
}
