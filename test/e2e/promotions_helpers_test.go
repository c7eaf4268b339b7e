package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/app"
	"taskactions/internal/executor"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// promoServer is a server whose executor runs http steps: the shared one
// when its configuration claims http, else one of the test's own.
func promoServer(t *testing.T) *server {
	t.Helper()
	if executor.ParseTaskTypes(testserver.Config("", "").ExecutorTaskTypes).Claims("http") {
		return srv
	}
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) { c.ExecutorTaskTypes = promoTaskTypes })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// kproject is a project (a namespace) of a server that no other test uses.
type kproject struct {
	t    testing.TB
	s    *server
	name string
}

func newKProject(t testing.TB, s *server) *kproject {
	return &kproject{t: t, s: s, name: fmt.Sprintf("promo%d", seq.Add(1))}
}

// url is the URL of a path under the project.
func (k *kproject) url(path string) string {
	return fmt.Sprintf("%s/api/v1/projects/%s%s", k.s.URL(), k.name, path)
}

// do makes one request by hand with the admin token, for the error tests
// that send what no generated client would; like a client, it declares
// JSON only for a body.
func (k *kproject) do(method, path, body string) stageReply {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, k.url(path), strings.NewReader(body))
	if err != nil {
		k.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.s.http.Do(req)
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	return stageReply{code: resp.StatusCode, header: resp.Header, body: []byte(readAll(k.t, resp.Body))}
}

// call makes one call of the generated client with the admin token,
// keeping its answer whole.
func (k *kproject) call(do func(ctx context.Context, c *client.ClientWithResponses) (generated, error)) stageReply {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := do(ctx, k.s.api)
	if err != nil {
		k.t.Fatal(err)
	}
	return replyOf(r)
}

// The Kargo operations the tests use, through the generated client; the
// bodies are JSON.

func (k *kproject) postStage(body string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.CreateStageWithBodyWithResponse(ctx, k.name, "application/json", strings.NewReader(body))
		return r, err
	})
}

func (k *kproject) getStage(name string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.GetStageWithResponse(ctx, k.name, name)
		return r, err
	})
}

func (k *kproject) postFreight(body string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.CreateFreightWithBodyWithResponse(ctx, k.name, "application/json", strings.NewReader(body))
		return r, err
	})
}

func (k *kproject) getFreight(nameOrAlias string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.GetFreightWithResponse(ctx, k.name, nameOrAlias)
		return r, err
	})
}

func (k *kproject) listFreight() stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.ListFreightWithResponse(ctx, k.name, nil)
		return r, err
	})
}

func (k *kproject) approve(freight, stage string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.ApproveFreightWithResponse(ctx, k.name, freight, &client.ApproveFreightParams{Stage: stage})
		return r, err
	})
}

func (k *kproject) postPromotion(stage, body string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.PromoteToStageWithBodyWithResponse(ctx, k.name, stage, "application/json", strings.NewReader(body))
		return r, err
	})
}

func (k *kproject) postDownstream(stage, body string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.PromoteDownstreamWithBodyWithResponse(ctx, k.name, stage, "application/json", strings.NewReader(body))
		return r, err
	})
}

func (k *kproject) getPromotion(name string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.GetPromotionWithResponse(ctx, k.name, name)
		return r, err
	})
}

// listPromotions lists the project's Promotions, or (stage set) a Stage's.
func (k *kproject) listPromotions(stage string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		if stage != "" {
			r, err := c.ListStagePromotionsWithResponse(ctx, k.name, stage)
			return r, err
		}
		r, err := c.ListPromotionsWithResponse(ctx, k.name)
		return r, err
	})
}

func (k *kproject) abort(promotion string) stageReply {
	return k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		r, err := c.AbortPromotionWithResponse(ctx, k.name, promotion)
		return r, err
	})
}

// into decodes a reply after checking its status.
func into[T any](t testing.TB, r stageReply, want int) T {
	t.Helper()
	if r.code != want {
		t.Fatalf("HTTP %d, want %d: %s", r.code, want, r.body)
	}
	var v T
	mustJSON(t, r.body, &v)
	return v
}

// pstep is a promotion step; config (nil: none) is encoded as JSON.
func pstep(uses, as string, config any) kargoapi.PromotionStep {
	s := kargoapi.PromotionStep{Uses: uses, As: as}
	if config != nil {
		b, _ := json.Marshal(config)
		s.Config = &apiextensionsv1.JSON{Raw: b}
	}
	return s
}

// direct takes Freight from the Warehouse w; from takes it from Stages.
func direct() kargoapi.FreightSources { return kargoapi.FreightSources{Direct: true} }
func from(stages ...string) kargoapi.FreightSources {
	return kargoapi.FreightSources{Stages: stages}
}

// createStage creates a Stage requesting Freight of Warehouse w.
func (k *kproject) createStage(name string, src kargoapi.FreightSources, vars []kargoapi.ExpressionVariable, steps ...kargoapi.PromotionStep) kargoapi.Stage {
	k.t.Helper()
	spec := map[string]any{
		"requestedFreight": []any{map[string]any{"origin": map[string]any{"kind": "Warehouse", "name": "w"}, "sources": src}},
	}
	if len(steps) > 0 {
		spec["promotionTemplate"] = map[string]any{"spec": map[string]any{"steps": steps}}
	}
	if len(vars) > 0 {
		spec["vars"] = vars
	}
	body := mustMarshal(k.t, map[string]any{"metadata": map[string]any{"name": name}, "spec": spec})
	return into[kargoapi.Stage](k.t, k.postStage(body), http.StatusCreated)
}

func (k *kproject) stage(name string) kargoapi.Stage {
	k.t.Helper()
	return into[kargoapi.Stage](k.t, k.getStage(name), http.StatusOK)
}

// createFreight creates Freight of Warehouse w with one image at tag.
func (k *kproject) createFreight(tag, alias string) kargoapi.Freight {
	k.t.Helper()
	body := map[string]any{
		"origin": map[string]any{"kind": "Warehouse", "name": "w"},
		"images": []any{map[string]any{"repoURL": "ghcr.io/example/app", "tag": tag, "digest": "sha256:" + tag}},
	}
	if alias != "" {
		body["alias"] = alias
	}
	return into[kargoapi.Freight](k.t, k.postFreight(mustMarshal(k.t, body)), http.StatusCreated)
}

func (k *kproject) freight(nameOrAlias string) kargoapi.Freight {
	k.t.Helper()
	return into[kargoapi.Freight](k.t, k.getFreight(nameOrAlias), http.StatusOK)
}

// promote promotes Freight (by name) to a Stage.
func (k *kproject) promote(stage, freight string) kargoapi.Promotion {
	k.t.Helper()
	r := k.postPromotion(stage, fmt.Sprintf(`{"freight":%q}`, freight))
	return into[kargoapi.Promotion](k.t, r, http.StatusCreated)
}

func (k *kproject) promotion(name string) kargoapi.Promotion {
	k.t.Helper()
	return into[kargoapi.Promotion](k.t, k.getPromotion(name), http.StatusOK)
}

// promotionNames lists the names of a project's Promotions, or (stage
// set) a Stage's, in the server's order.
func (k *kproject) promotionNames(stage string) []string {
	k.t.Helper()
	l := into[kargoapi.PromotionList](k.t, k.listPromotions(stage), http.StatusOK)
	names := []string{}
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// finished waits for a Promotion to end and returns it.
func (k *kproject) finished(name string) kargoapi.Promotion {
	k.t.Helper()
	var p kargoapi.Promotion
	if !within(20*time.Second, func() bool {
		p = k.promotion(name)
		return p.Status.Phase.IsTerminal()
	}) {
		var acts []string
		for n, a := range k.actions(name) {
			acts = append(acts, fmt.Sprintf("%s %s attempts %d %s", n, a.Phase, a.Attempts, mustMarshal(k.t, a.PhaseHistory)))
		}
		k.t.Fatalf("Promotion %s has not ended in 20 s: status %s; its run: %v", name, mustMarshal(k.t, p.Status), acts)
	}
	return p
}

// runOf is the name of a Promotion's run: the ULID in its name.
func runOf(promotion string) string {
	parts := strings.Split(promotion, ".")
	return strings.ToLower(parts[len(parts)-2])
}

// actions returns the actions of a Promotion's run by name (none: empty).
func (k *kproject) actions(promotion string) map[string]client.Action {
	k.t.Helper()
	resp, err := k.s.api.ListRunActionsWithResponse(context.Background(), k.name, "kargo", runOf(promotion), nil)
	if err != nil {
		k.t.Fatal(err)
	}
	out := map[string]client.Action{}
	if resp.StatusCode() == http.StatusNotFound {
		return out
	}
	if resp.JSON200 == nil {
		k.t.Fatalf("actions of %s: HTTP %d %s", promotion, resp.StatusCode(), resp.Body)
	}
	for _, a := range resp.JSON200.Items {
		out[a.ActionId.Name] = a
	}
	return out
}

// steps describes a Promotion's step records as "alias=Status" each.
func steps(p kargoapi.Promotion) []string {
	out := []string{}
	for _, m := range p.Status.StepExecutionMetadata {
		out = append(out, m.Alias+"="+string(m.Status))
	}
	return out
}

// record is the step record of an alias (zero if none).
func record(p kargoapi.Promotion, alias string) kargoapi.StepExecutionMetadata {
	for _, m := range p.Status.StepExecutionMetadata {
		if m.Alias == alias {
			return m
		}
	}
	return kargoapi.StepExecutionMetadata{}
}

// stateOf decodes a Promotion's status.state.
func stateOf(t testing.TB, p kargoapi.Promotion) map[string]any {
	t.Helper()
	out := map[string]any{}
	if p.Status.State != nil {
		mustJSON(t, p.Status.State.Raw, &out)
	}
	return out
}

// pipelineSteps are the steps of every Stage of the pipeline: a login
// whose output (the token) the deploy sends, both with config templated
// from ctx, vars and outputs.
func pipelineSteps(rec *recorder) []kargoapi.PromotionStep {
	type nv = map[string]string
	return []kargoapi.PromotionStep{
		pstep("http", "login", map[string]any{
			"method": "POST", "url": rec.URL + "/token",
			"headers": []nv{{"name": "X-Stage", "value": "${{ ctx.stage }}"}, {"name": "X-Var", "value": "${{ vars.x }}"}},
			"body":    "stage=${{ ctx.stage }}&x=${{ vars.x }}",
			"outputs": []nv{{"name": "token", "fromExpression": "response.body.token"}},
		}),
		pstep("http", "deploy", map[string]any{
			"method": "PUT", "url": rec.URL + "/deploy/${{ ctx.stage }}",
			"headers": []nv{{"name": "Authorization", "value": "Bearer ${{ outputs.login.token }}"}},
			"body":    "freight=${{ ctx.targetFreight.name }}",
			"outputs": []nv{{"name": "code", "fromExpression": "response.status"}},
		}),
	}
}
