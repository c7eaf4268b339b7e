package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// Every operation of the document, with valid inputs, through the
// generated Go client as the README sets it up (client.WithBearerToken and
// nothing else): each answers its documented success status with a body
// that decodes into its type and matches the document, every stream
// included; then the recorder checks that no operation was left out.
func TestEveryOperationThroughTheGoClient(t *testing.T) {
	rec := newContractRecorder(t, srv.URL())
	c := contractClient(t, srv, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Run("document", func(t *testing.T) { contractDocument(t, ctx, c) })
	t.Run("session", func(t *testing.T) { contractSession(t, ctx, c) })
	t.Run("actions", func(t *testing.T) { contractActions(t, ctx, c) })
	t.Run("kargo", func(t *testing.T) { contractKargo(t, ctx, c) })
	t.Run("warehouses", func(t *testing.T) { contractWarehouses(t, ctx, c) })
	t.Run("project config", func(t *testing.T) { contractProjectConfig(t, ctx, c) })
	t.Run("analysis", func(t *testing.T) { contractAnalysis(t, ctx, c) })
	t.Run("every operation", rec.check)
}

func contractDocument(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	y, err := c.GetOpenAPIWithResponse(ctx)
	want(t, y, err, http.StatusOK)
	if doc := decoded(t, y.YAML200); len(doc.Content) == 0 || !strings.HasPrefix(string(y.Body), "openapi: 3.0") {
		t.Errorf("the YAML document: %d nodes, body %.40q", len(doc.Content), y.Body)
	}
	j, err := c.GetOpenAPIJSONWithResponse(ctx)
	want(t, j, err, http.StatusOK)
	if doc := decoded(t, j.JSON200); doc.Openapi != "3.0.3" || doc.Info.Title != "taskactions" || doc.Paths["/actions"] == nil || doc.AdditionalProperties["components"] == nil && doc.Components == nil {
		t.Errorf("the JSON document: %s %s, %d paths", doc.Openapi, doc.Info.Title, len(doc.Paths))
	}
}

func contractSession(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	s, err := c.GetSessionWithResponse(ctx)
	want(t, s, err, http.StatusOK)
	if decoded(t, s.JSON200).Subject != "admin" {
		t.Errorf("subject %q, want admin", s.JSON200.Subject)
	}
	in, err := c.CreateSessionWithResponse(ctx, client.LoginRequest{Token: srv.token})
	want(t, in, err, http.StatusOK)
	if decoded(t, in.JSON200).Subject != "admin" || !strings.Contains(in.HTTPResponse.Header.Get("Set-Cookie"), "HttpOnly") {
		t.Errorf("log in: %+v, Set-Cookie %q", in.JSON200, in.HTTPResponse.Header.Get("Set-Cookie"))
	}
	out, err := c.DeleteSessionWithResponse(ctx)
	want(t, out, err, http.StatusNoContent)
}

func contractActions(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	run := newRun()
	p, d, r := run.Project, run.Domain, run.Name
	root := actionSpec(run, "a0", "", "external")
	e, err := c.EnqueueActionWithResponse(ctx, root)
	want(t, e, err, http.StatusCreated)
	decoded(t, e.JSON201)
	e, err = c.EnqueueActionWithResponse(ctx, root)
	want(t, e, err, http.StatusOK)
	decoded(t, e.JSON200)
	e, err = c.EnqueueActionWithResponse(ctx, actionSpec(run, "c1", "a0", "external"))
	want(t, e, err, http.StatusCreated)

	st, err := c.PutActionStatusWithResponse(ctx, p, d, r, "a0", client.StatusRequest{Attempt: 1, Status: client.ActionStatus{Phase: client.RUNNING}})
	want(t, st, err, http.StatusOK)
	if decoded(t, st.JSON200).Phase != client.RUNNING {
		t.Errorf("status: %s", st.JSON200.Phase)
	}
	lg, err := c.AppendActionLogsWithResponse(ctx, p, d, r, "a0", client.LogAppend{Attempt: 1, Text: "hello\n"})
	want(t, lg, err, http.StatusOK)
	if decoded(t, lg.JSON200).Size != 6 {
		t.Errorf("log size %d, want 6", lg.JSON200.Size)
	}
	one := 1
	logs, err := c.GetActionLogsWithResponse(ctx, p, d, r, "a0", &client.GetActionLogsParams{Attempt: &one})
	want(t, logs, err, http.StatusOK)
	if string(logs.Body) != "hello\n" {
		t.Errorf("log %q", logs.Body)
	}
	tail := "bytes=-3"
	logs, err = c.GetActionLogsWithResponse(ctx, p, d, r, "a0", &client.GetActionLogsParams{Attempt: &one, Range: &tail})
	want(t, logs, err, http.StatusPartialContent)
	if string(logs.Body) != "lo\n" {
		t.Errorf("log tail %q", logs.Body)
	}

	contractReads(t, ctx, c, run)
	contractActionStreams(t, ctx, c, run)

	// An abort without its optional body, as the Go client sends it: no
	// body, and an empty Content-Type (the generated code always adds the
	// header; the TypeScript SDKs send none, see hack/openapi/e2e).
	ab, err := c.AbortActionWithBodyWithResponse(ctx, p, d, r, "c1", "", nil)
	want(t, ab, err, http.StatusAccepted)
	if decoded(t, ab.JSON202).Phase != client.ABORTED || ab.JSON202.AbortReason == nil || *ab.JSON202.AbortReason != "aborted by user" {
		t.Errorf("abort without a reason: %s %v", ab.JSON202.Phase, ab.JSON202.AbortReason)
	}
	reason := "done here"
	ab, err = c.AbortActionWithResponse(ctx, p, d, r, "a0", client.AbortRequest{Reason: &reason})
	want(t, ab, err, http.StatusAccepted)
	if decoded(t, ab.JSON202).AbortReason == nil || *ab.JSON202.AbortReason != reason {
		t.Errorf("abort reason %v", ab.JSON202.AbortReason)
	}
	da, err := c.DeleteActionWithResponse(ctx, p, d, r, "c1", nil)
	want(t, da, err, http.StatusAccepted)
	dr, err := c.DeleteRunWithResponse(ctx, p, d, r, nil)
	want(t, dr, err, http.StatusAccepted)
}

// contractReads are the reads of a run whose root runs and has a child.
func contractReads(t *testing.T, ctx context.Context, c *client.ClientWithResponses, run client.RunIdentifier) {
	p, d, r := run.Project, run.Domain, run.Name
	pl, err := c.ListProjectsWithResponse(ctx)
	want(t, pl, err, http.StatusOK)
	if !slices.ContainsFunc(decoded(t, pl.JSON200).Items, func(x client.ProjectDomain) bool { return x.Project == p && x.Domain == d }) {
		t.Errorf("%s/%s not among the projects", p, d)
	}
	// Several phases: the generated client repeats the parameter. Run
	// summaries come from the run service, which records a status shortly
	// after it is written (docs/operations.md, Durable history), so the first is awaited.
	listed := func(phases string) bool {
		var ps []client.Phase
		for _, ph := range strings.Split(phases, ",") {
			ps = append(ps, client.Phase(ph))
		}
		rl, err := c.ListRunsWithResponse(ctx, p, d, &client.ListRunsParams{Phase: &ps})
		want(t, rl, err, http.StatusOK)
		return slices.ContainsFunc(decoded(t, rl.JSON200).Items, func(x client.RunSummary) bool { return x.Run.Name == r })
	}
	eventually(t, 10*time.Second, "run "+r+" among the runs in RUNNING,SUCCEEDED", func() bool { return listed("RUNNING,SUCCEEDED") })
	if listed("FAILED,TIMED_OUT") {
		t.Errorf("runs in FAILED,TIMED_OUT: has %s", r)
	}
	gr, err := c.GetRunWithResponse(ctx, p, d, r)
	want(t, gr, err, http.StatusOK)
	if decoded(t, gr.JSON200).ActionCount != 2 {
		t.Errorf("run: %d actions", gr.JSON200.ActionCount)
	}
	ra, err := c.ListRunActionsWithResponse(ctx, p, d, r, nil)
	want(t, ra, err, http.StatusOK)
	if len(decoded(t, ra.JSON200).Items) != 2 {
		t.Errorf("run actions: %d", len(ra.JSON200.Items))
	}
	ga, err := c.GetActionWithResponse(ctx, p, d, r, "c1")
	want(t, ga, err, http.StatusOK)
	if a := decoded(t, ga.JSON200); a.ParentActionName == nil || *a.ParentActionName != "a0" {
		t.Errorf("c1's parent %v", a.ParentActionName)
	}
	ch, err := c.ListChildActionsWithResponse(ctx, p, d, r, "a0", nil)
	want(t, ch, err, http.StatusOK)
	if items := decoded(t, ch.JSON200).Items; len(items) != 1 || items[0].ActionId.Name != "c1" {
		t.Errorf("children of a0: %v", items)
	}
}

// contractActionStreams reads the snapshot of each stream of the run.
func contractActionStreams(t *testing.T, ctx context.Context, c *client.ClientWithResponses, run client.RunIdentifier) {
	p, d, r := run.Project, run.Domain, run.Name
	names := func(items []client.ActionEvent) []string {
		var out []string
		for _, a := range items {
			out = append(out, a.ActionId.Name)
		}
		slices.Sort(out)
		return out
	}
	s, err := c.StreamActionEvents(ctx, p, d, r, "a0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(untilSynced(t, ctx, s)); !slices.Equal(got, []string{"a0", "c1"}) {
		t.Errorf("the action stream's snapshot: %v", got)
	}
	s, err = c.StreamRunEvents(ctx, p, d, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(untilSynced(t, ctx, s)); !slices.Equal(got, []string{"a0", "c1"}) {
		t.Errorf("the run stream's snapshot: %v", got)
	}
	rs, err := c.StreamRunSummaries(ctx, p, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if runs := untilSynced(t, ctx, rs); len(runs) != 1 || runs[0].Run.Name != r || runs[0].Phase != client.RUNNING {
		t.Errorf("the run summaries' snapshot: %v", runs)
	}
	ps, err := c.StreamProjects(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(untilSynced(t, ctx, ps), func(x client.ProjectDomain) bool { return x.Project == p && x.Domain == d }) {
		t.Errorf("%s/%s not in the projects stream", p, d)
	}
	ls, err := c.StreamActionLogs(ctx, p, d, r, "a0", &client.LogStreamOptions{Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ev, err := ls.Next()
	if err != nil || ev.Log == nil || ev.Log.Text != "hello\n" || ev.ID != "6" {
		t.Errorf("the log stream's first event: %+v %v", ev, err)
	}
}

// contractKargo creates, reads, promotes, streams and deletes Stages,
// Freight and Promotions.
func contractKargo(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	k := fmt.Sprintf("contract%d", seq.Add(1))
	test := kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: kargoapi.StageSpec{
		RequestedFreight:  []kargoapi.FreightRequest{{Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w"}, Sources: kargoapi.FreightSources{Direct: true}}},
		PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{Steps: []kargoapi.PromotionStep{{Uses: "echo", As: "hello"}}}},
	}}
	cs, err := c.CreateStageWithResponse(ctx, k, test)
	want(t, cs, err, http.StatusCreated)
	decoded(t, cs.JSON201)
	// YAML, as the document allows.
	cs, err = c.CreateStageWithBodyWithResponse(ctx, k, "application/yaml", strings.NewReader(
		"metadata: {name: uat}\nspec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {stages: [test]}\n"+
			"  promotionTemplate: {spec: {steps: [{uses: echo}]}}\n"))
	want(t, cs, err, http.StatusCreated)
	ls, err := c.ListStagesWithResponse(ctx, k)
	want(t, ls, err, http.StatusOK)
	if n := len(decoded(t, ls.JSON200).Items); n != 2 {
		t.Errorf("%d Stages, want 2", n)
	}
	// A Stage changed since it was read (its controller writes it too) is
	// 409: read it again, as the document says.
	var rs *client.ReplaceStageResponse
	for tries := 1; ; tries++ {
		gs, err := c.GetStageWithResponse(ctx, k, "test")
		want(t, gs, err, http.StatusOK)
		got := *decoded(t, gs.JSON200)
		got.Spec.Shard = "a"
		rs, err = c.ReplaceStageWithResponse(ctx, k, "test", got)
		if err == nil && rs.StatusCode() == http.StatusConflict && tries < 10 {
			continue
		}
		want(t, rs, err, http.StatusOK)
		break
	}
	if decoded(t, rs.JSON200).Spec.Shard != "a" {
		t.Errorf("replaced shard %q", rs.JSON200.Spec.Shard)
	}
	wait := true
	rf, err := c.RefreshStageWithResponse(ctx, k, "test", &client.RefreshStageParams{Wait: &wait})
	want(t, rf, err, http.StatusOK)
	decoded(t, rf.JSON200)
	ss, err := c.StreamProjectStages(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(untilSynced(t, ctx, ss)); n != 2 {
		t.Errorf("the Stage stream's snapshot: %d Stages", n)
	}
	s1, err := c.StreamStage(ctx, k, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := untilSynced(t, ctx, s1); len(got) != 1 || got[0].Metadata == nil || got[0].Metadata.Name == nil || *got[0].Metadata.Name != "test" {
		t.Errorf("the Stage's stream: %v", got)
	}
	contractPromotions(t, ctx, c, k)
	del, err := c.DeleteStageWithResponse(ctx, k, "uat")
	want(t, del, err, http.StatusNoContent)
}

func contractPromotions(t *testing.T, ctx context.Context, c *client.ClientWithResponses, k string) {
	f := kargoapi.Freight{Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w"}, Images: []kargoapi.Image{{RepoURL: "ghcr.io/example/app", Tag: "1.0.0", Digest: "sha256:1"}}}
	cf, err := c.CreateFreightWithResponse(ctx, k, f)
	want(t, cf, err, http.StatusCreated)
	name := decoded(t, cf.JSON201).Name
	test := "test"
	lf, err := c.ListFreightWithResponse(ctx, k, &client.ListFreightParams{AvailableTo: &test})
	want(t, lf, err, http.StatusOK)
	if items := decoded(t, lf.JSON200).Items; len(items) != 1 || items[0].Name != name {
		t.Errorf("Freight available to test: %d", len(items))
	}
	gf, err := c.GetFreightWithResponse(ctx, k, name)
	want(t, gf, err, http.StatusOK)
	decoded(t, gf.JSON200)
	af, err := c.ApproveFreightWithResponse(ctx, k, name, &client.ApproveFreightParams{Stage: "uat"})
	want(t, af, err, http.StatusOK)
	if _, ok := decoded(t, af.JSON200).Status.ApprovedFor["uat"]; !ok {
		t.Errorf("approved for %v", af.JSON200.Status.ApprovedFor)
	}
	pr, err := c.PromoteToStageWithResponse(ctx, k, "test", client.PromoteRequest{Freight: &name})
	want(t, pr, err, http.StatusCreated)
	promo := decoded(t, pr.JSON201).Name
	lp, err := c.ListPromotionsWithResponse(ctx, k)
	want(t, lp, err, http.StatusOK)
	decoded(t, lp.JSON200)
	gp, err := c.GetPromotionWithResponse(ctx, k, promo)
	want(t, gp, err, http.StatusOK)
	decoded(t, gp.JSON200)
	sp, err := c.ListStagePromotionsWithResponse(ctx, k, "test")
	want(t, sp, err, http.StatusOK)
	if n := len(decoded(t, sp.JSON200).Items); n != 1 {
		t.Errorf("%d Promotions of test", n)
	}
	pd, err := c.PromoteDownstreamWithResponse(ctx, k, "test", client.PromoteRequest{Freight: &name})
	want(t, pd, err, http.StatusCreated)
	down := decoded(t, pd.JSON201).Items
	if len(down) != 1 || down[0].Spec.Stage != "uat" {
		t.Fatalf("promoted downstream: %v", down)
	}
	pps, err := c.StreamProjectPromotions(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(untilSynced(t, ctx, pps)); n != 2 {
		t.Errorf("the Promotion stream's snapshot: %d", n)
	}
	sps, err := c.StreamStagePromotions(ctx, k, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(untilSynced(t, ctx, sps)); n != 1 {
		t.Errorf("test's Promotion stream's snapshot: %d", n)
	}
	ap, err := c.AbortPromotionWithResponse(ctx, k, down[0].Name)
	want(t, ap, err, http.StatusOK)
	decoded(t, ap.JSON200)
	contractVerification(t, ctx, c, k)
}

// contractVerification asks for test's Freight to be verified again once
// its Promotion has ended and it was verified (at once: test has no
// spec.verification), then for the verification to be aborted (which an
// ended one ignores).
func contractVerification(t *testing.T, ctx context.Context, c *client.ClientWithResponses, k string) {
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		gs, err := c.GetStageWithResponse(ctx, k, "test")
		want(t, gs, err, http.StatusOK)
		if fc := decoded(t, gs.JSON200).Status.FreightHistory.Current(); fc != nil && fc.VerificationHistory.Current() != nil {
			id = fc.VerificationHistory.Current().ID
		}
	}
	rv, err := c.ReverifyStageWithResponse(ctx, k, "test")
	want(t, rv, err, http.StatusOK)
	if req := kargoapi.ParseVerificationRequest(decoded(t, rv.JSON200).Annotations[kargoapi.AnnotationKeyReverify]); !req.ForID(id) || req.Actor == "" {
		t.Errorf("reverify annotation %q, want one for %q with the actor", rv.JSON200.Annotations[kargoapi.AnnotationKeyReverify], id)
	}
	av, err := c.AbortStageVerificationWithResponse(ctx, k, "test")
	want(t, av, err, http.StatusOK)
	decoded(t, av.JSON200)
}
