// Every operation of the document through openapi-fetch, typed by
// openapi-typescript, with the token and nothing else; every stream through
// a plain EventSource (the eventsource package: Node has none), whose data
// is typed by the schema the event's name has (x-sse-events).
import createClient from 'openapi-fetch';
import { EventSource } from 'eventsource';

import type { components, paths } from '../gen/openapi-typescript';
import { check, Equal, Suite, Target, typed } from './common';

type S = components['schemas'];

// What openapi-typescript says a stream's body is: the data of its events.
type RunStream = paths['/projects/{project}/domains/{domain}/runs/{run}/events']['get']['responses'][200]['content']['text/event-stream'];
typed<Equal<RunStream, S['ActionStreamData']>>(true);
typed<Equal<S['ActionStreamData'], S['ActionEvent'] | S['SyncedEvent'] | S['ResetEvent']>>(true);

/** What each stream's events carry, by name, as x-sse-events says. */
interface Events<T> {
  item: string;
  _t?: T;
}

/**
 * Opens the stream at path with a plain EventSource and reads it up to
 * `synced` (or, with until, up to the first item until accepts), returning
 * the items.
 */
function readStream<T>(t: Target, r: Suite, op: string, path: string, ev: Events<T>, until?: (item: T) => boolean): Promise<T[]> {
  const es = new EventSource(`${t.url}/api/v1${path}`, {
    // The token: an EventSource in a browser sends the session cookie
    // instead, and can set no header.
    fetch: async (url, init) => {
      const res = await fetch(url, { ...init, headers: { ...init.headers, Authorization: `Bearer ${t.token}` } });
      r.record(op, res.status);
      return res;
    },
  });
  return new Promise<T[]>((resolve, reject) => {
    const items: T[] = [];
    // Events of the chunk that held synced are still dispatched after
    // close: once done, they are not the snapshot's.
    let ended = false;
    const done = (err?: Error) => {
      ended = true;
      es.close();
      if (err) reject(err);
      else resolve(items);
    };
    es.addEventListener(ev.item, (m) => {
      if (ended) return;
      const item = JSON.parse(m.data) as T;
      items.push(item);
      if (until?.(item)) done();
    });
    es.addEventListener('synced', (m) => {
      const s = JSON.parse(m.data) as S['SyncedEvent'];
      if (typeof s.resumed !== 'boolean' || typeof s.count !== 'number') done(new Error(`synced: ${m.data}`));
      else if (!until) done();
    });
    es.addEventListener('reset', () => {
      if (!ended) items.length = 0;
    });
    es.onerror = (e) => done(new Error(`EventSource: ${e.message ?? 'error'} (HTTP ${e.code ?? '?'})`));
  });
}

const actionEvents: Events<S['ActionEvent']> = { item: 'action' };

export async function openapiFetch(t: Target): Promise<Suite> {
  const r = new Suite('openapi-fetch');
  const c = createClient<paths>({ baseUrl: `${t.url}/api/v1`, headers: { Authorization: `Bearer ${t.token}` } });
  const run = { project: `${t.prefix}f`, domain: 'dev', name: 'r1' };
  const path = { project: run.project, domain: run.domain, run: run.name };

  await r.step('getOpenAPI', async () => {
    const { data, response } = await c.GET('/openapi.yaml', { parseAs: 'text' });
    r.answered('getOpenAPI', response.status, 200);
    check(typeof data === 'string' && data.startsWith('openapi: 3.0'), 'not the YAML document');
  });
  await r.step('getOpenAPIJSON', async () => {
    const { data, response } = await c.GET('/openapi.json');
    r.answered('getOpenAPIJSON', response.status, 200, data);
    check(data?.openapi === '3.0.3' && data.info.title === 'taskactions' && '/actions' in data.paths, 'not the document');
  });
  await r.step('getSession', async () => {
    const { data, response } = await c.GET('/session');
    r.answered('getSession', response.status, 200, data);
    check(data?.subject === 'admin', `subject ${data?.subject}`);
  });
  await r.step('createSession', async () => {
    const { data, response } = await c.POST('/session', { body: { token: t.token } });
    r.answered('createSession', response.status, 200, data);
    check(data?.subject === 'admin' && !!response.headers.get('set-cookie'), 'no session');
  });
  await r.step('deleteSession', async () => {
    const { response } = await c.DELETE('/session');
    r.answered('deleteSession', response.status, 204);
  });

  const spec = (name: string, parent?: string): S['EnqueueRequest'] => ({
    action: { actionId: { run, name }, parentActionName: parent, task: { taskTemplate: { type: 'external' } } },
  });
  await r.step('enqueueAction', async () => {
    let { data, error, response } = await c.POST('/actions', { body: spec('a0') });
    r.answered('enqueueAction', response.status, 201, error);
    check(data?.phase === 'QUEUED', `phase ${data?.phase}`);
    ({ data, error, response } = await c.POST('/actions', { body: spec('a0') }));
    r.answered('enqueueAction', response.status, 200, error);
    ({ error, response } = await c.POST('/actions', { body: spec('c1', 'a0') }));
    r.answered('enqueueAction', response.status, 201, error);
  });
  const a0 = { ...path, action: 'a0' };
  await r.step('putActionStatus', async () => {
    const { data, error, response } = await c.PUT('/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/status', {
      params: { path: a0 },
      body: { attempt: 1, status: { phase: 'RUNNING' } },
    });
    r.answered('putActionStatus', response.status, 200, error);
    check(data?.phase === 'RUNNING', `phase ${data?.phase}`);
  });
  await r.step('appendActionLogs', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/logs', {
      params: { path: a0 },
      body: { attempt: 1, text: 'hello\n' },
    });
    r.answered('appendActionLogs', response.status, 200, error);
    check(data?.size === 6, `size ${data?.size}`);
  });
  await r.step('getActionLogs', async () => {
    const logs = '/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/logs' as const;
    let { data, response } = await c.GET(logs, { params: { path: a0, query: { attempt: 1 } }, parseAs: 'text' });
    r.answered('getActionLogs', response.status, 200, data);
    check(data === 'hello\n', `log ${data}`);
    ({ data, response } = await c.GET(logs, { params: { path: a0, query: { attempt: 1 }, header: { Range: 'bytes=-3' } }, parseAs: 'text' }));
    r.answered('getActionLogs', response.status, 206, data);
    check(data === 'lo\n', `tail ${data}`);
  });
  await r.step('listProjects', async () => {
    const { data, error, response } = await c.GET('/projects');
    r.answered('listProjects', response.status, 200, error);
    check(!!data?.items.some((p) => p.project === run.project && p.domain === run.domain), 'the project is not listed');
  });
  await r.step('listRuns', async () => {
    // Several phases: openapi-fetch repeats the parameter.
    for (const [phase, found] of [[['RUNNING', 'SUCCEEDED'], true], [['FAILED', 'TIMED_OUT'], false]] as const) {
      const { data, error, response } = await c.GET('/projects/{project}/domains/{domain}/runs', {
        params: { path: { project: run.project, domain: run.domain }, query: { phase: [...phase] } },
      });
      r.answered('listRuns', response.status, 200, error);
      check(data?.items.some((x) => x.run.name === run.name) === found, `runs in ${phase}: ${JSON.stringify(data)}`);
    }
  });
  await r.step('getRun', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/domains/{domain}/runs/{run}', { params: { path } });
    r.answered('getRun', response.status, 200, error);
    check(data?.actionCount === 2, `actions ${data?.actionCount}`);
  });
  await r.step('listRunActions', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/domains/{domain}/runs/{run}/actions', { params: { path } });
    r.answered('listRunActions', response.status, 200, error);
    check(data?.items.length === 2, `actions ${data?.items.length}`);
    // Filtered, as the SDK sends an array (the parameter repeated).
    const phase = data?.items.find((a) => a.actionId.name === 'c1')?.phase ?? 'QUEUED';
    const only = await c.GET('/projects/{project}/domains/{domain}/runs/{run}/actions', { params: { path, query: { phase: [phase, 'TIMED_OUT'], q: 'C1' } } });
    r.answered('listRunActions', only.response.status, 200, only.error);
    check(only.data?.items.map((a) => a.actionId.name).join() === 'c1', `filtered ${JSON.stringify(only.data?.items.map((a) => a.actionId.name))}`);
  });
  await r.step('getAction', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/domains/{domain}/runs/{run}/actions/{action}', { params: { path: { ...path, action: 'c1' } } });
    r.answered('getAction', response.status, 200, error);
    check(data?.parentActionName === 'a0', `parent ${data?.parentActionName}`);
  });
  await r.step('listChildActions', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/children', { params: { path: a0 } });
    r.answered('listChildActions', response.status, 200, error);
    check(data?.items.length === 1 && data.items[0].actionId.name === 'c1', 'children');
  });

  const base = `/projects/${run.project}/domains/${run.domain}`;
  await r.step('streamActionEvents', async () => {
    const items = await readStream(t, r, 'streamActionEvents', `${base}/runs/${run.name}/actions/a0/events`, actionEvents);
    check(items.map((a) => a.actionId.name).sort().join() === 'a0,c1', `snapshot ${items.length}`);
  });
  await r.step('streamRunEvents', async () => {
    const items = await readStream(t, r, 'streamRunEvents', `${base}/runs/${run.name}/events`, actionEvents);
    check(items.length === 2 && items.every((a) => typeof a.deleted === 'boolean'), `snapshot ${items.length}`);
    const only = await readStream(t, r, 'streamRunEvents', `${base}/runs/${run.name}/events?q=c1`, actionEvents);
    check(only.map((a) => a.actionId.name).join() === 'c1', `filtered snapshot ${only.length}`);
  });
  await r.step('streamRunSummaries', async () => {
    const items = await readStream(t, r, 'streamRunSummaries', `${base}/events`, { item: 'run' } as Events<S['RunEvent']>);
    check(items.length === 1 && items[0].run.name === run.name && items[0].phase === 'RUNNING', `snapshot ${JSON.stringify(items)}`);
  });
  await r.step('streamProjects', async () => {
    const items = await readStream(t, r, 'streamProjects', '/project-events', { item: 'project' } as Events<S['ProjectDomain']>);
    check(items.some((p) => p.project === run.project), 'the project is not in the stream');
  });
  await r.step('streamActionLogs', async () => {
    const items = await readStream(t, r, 'streamActionLogs', `${base}/runs/${run.name}/actions/a0/logs/events?attempt=1`, { item: 'log' } as Events<S['LogText']>, () => true);
    check(items[0]?.text === 'hello\n' && items[0].offset === 0, `log ${JSON.stringify(items)}`);
  });

  await r.step('abortAction', async () => {
    const abort = '/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/abort' as const;
    // Without its optional body: openapi-fetch sends no body and no Content-Type.
    let { data, error, response } = await c.POST(abort, { params: { path: { ...path, action: 'c1' } } });
    r.answered('abortAction', response.status, 202, error);
    check(data?.phase === 'ABORTED' && data.abortReason === 'aborted by user', `abort ${data?.phase} ${data?.abortReason}`);
    ({ data, error, response } = await c.POST(abort, { params: { path: a0 }, body: { reason: 'done here' } }));
    r.answered('abortAction', response.status, 202, error);
    check(data?.abortReason === 'done here', `reason ${data?.abortReason}`);
  });
  await r.step('deleteAction', async () => {
    const { error, response } = await c.DELETE('/projects/{project}/domains/{domain}/runs/{run}/actions/{action}', { params: { path: { ...path, action: 'c1' } } });
    r.answered('deleteAction', response.status, 202, error);
  });
  await r.step('deleteRun', async () => {
    const { error, response } = await c.DELETE('/projects/{project}/domains/{domain}/runs/{run}', { params: { path } });
    r.answered('deleteRun', response.status, 202, error);
  });

  await kargo(t, r, c, `${t.prefix}fk`);
  await warehouses(t, r, c, `${t.prefix}fw`);
  await projectConfig(r, c, `${t.prefix}fc`);
  await analysis(t, r, c, `${t.prefix}fa`);
  return r;
}

type Client = ReturnType<typeof createClient<paths>>;

async function kargo(t: Target, r: Suite, c: Client, project: string): Promise<void> {
  const p = { project };
  const stage = (name: string, sources: S['FreightRequest']['sources']): S['Stage'] => ({
    metadata: { name },
    spec: { requestedFreight: [{ origin: { kind: 'Warehouse', name: 'w' }, sources }], promotionTemplate: { spec: { steps: [{ uses: 'echo', as: 'hello' }] } } },
  });
  await r.step('createStage', async () => {
    for (const s of [stage('test', { direct: true }), stage('uat', { stages: ['test'] })]) {
      const { data, error, response } = await c.POST('/projects/{project}/stages', { params: { path: p }, body: s });
      r.answered('createStage', response.status, 201, error);
      check(data?.metadata?.name === s.metadata?.name, 'created');
    }
  });
  await r.step('listStages', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/stages', { params: { path: p } });
    r.answered('listStages', response.status, 200, error);
    check(data?.items.length === 2, `stages ${data?.items.length}`);
  });
  await r.step('getStage', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/stages/{stage}', { params: { path: { ...p, stage: 'test' } } });
    r.answered('getStage', response.status, 200, error);
    check(data?.metadata?.name === 'test', 'the Stage');
  });
  await r.step('replaceStage', async () => {
    // A Stage changed since it was read (its controller writes it too) is
    // 409: read it again, as the document says.
    const stagePath = { params: { path: { ...p, stage: 'test' } } };
    for (let tries = 1; ; tries++) {
      const { data: test } = await c.GET('/projects/{project}/stages/{stage}', stagePath);
      const { data, error, response } = await c.PUT('/projects/{project}/stages/{stage}', { ...stagePath, body: { ...test, spec: { ...test?.spec, shard: 'a' } } });
      if (response.status === 409 && tries < 10) continue;
      r.answered('replaceStage', response.status, 200, error);
      check(data?.spec?.shard === 'a', 'shard');
      return;
    }
  });
  await r.step('refreshStage', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/stages/{stage}/refresh', { params: { path: { ...p, stage: 'test' }, query: { wait: true } } });
    r.answered('refreshStage', response.status, 200, error);
    check(!!data?.status?.lastHandledRefresh, 'not handled');
  });
  await r.step('streamProjectStages', async () => {
    const items = await readStream(t, r, 'streamProjectStages', `/projects/${project}/stage-events`, { item: 'stage' } as Events<S['StageEvent']>);
    check(items.length === 2 && items.every((s) => s.deleted === false), `snapshot ${items.length}`);
  });
  await r.step('streamStage', async () => {
    const items = await readStream(t, r, 'streamStage', `/projects/${project}/stages/test/events`, { item: 'stage' } as Events<S['StageEvent']>);
    check(items.length === 1 && items[0].metadata?.name === 'test', `snapshot ${items.length}`);
  });

  let freight = '';
  await r.step('createFreight', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/freight', {
      params: { path: p },
      body: { origin: { kind: 'Warehouse', name: 'w' }, images: [{ repoURL: 'ghcr.io/example/app', tag: '1.0.0', digest: 'sha256:1' }] },
    });
    r.answered('createFreight', response.status, 201, error);
    freight = data?.metadata?.name ?? '';
  });
  await r.step('listFreight', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/freight', { params: { path: p, query: { availableTo: 'test' } } });
    r.answered('listFreight', response.status, 200, error);
    check(data?.items.length === 1, `freight ${data?.items.length}`);
  });
  await r.step('getFreight', async () => {
    const { error, response } = await c.GET('/projects/{project}/freight/{freight}', { params: { path: { ...p, freight } } });
    r.answered('getFreight', response.status, 200, error);
  });
  await r.step('approveFreight', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/freight/{freight}/approve', { params: { path: { ...p, freight }, query: { stage: 'uat' } } });
    r.answered('approveFreight', response.status, 200, error);
    check(!!data?.status?.approvedFor && 'uat' in data.status.approvedFor, 'not approved');
  });
  let promotion = '';
  await r.step('promoteToStage', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/stages/{stage}/promotions', { params: { path: { ...p, stage: 'test' } }, body: { freight } });
    r.answered('promoteToStage', response.status, 201, error);
    promotion = data?.metadata?.name ?? '';
  });
  await r.step('listPromotions', async () => {
    const { error, response } = await c.GET('/projects/{project}/promotions', { params: { path: p } });
    r.answered('listPromotions', response.status, 200, error);
  });
  await r.step('getPromotion', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/promotions/{promotion}', { params: { path: { ...p, promotion } } });
    r.answered('getPromotion', response.status, 200, error);
    check(data?.spec?.stage === 'test', 'the Promotion');
  });
  await r.step('listStagePromotions', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/stages/{stage}/promotions', { params: { path: { ...p, stage: 'test' } } });
    r.answered('listStagePromotions', response.status, 200, error);
    check(data?.items.length === 1, `promotions ${data?.items.length}`);
  });
  let downstream = '';
  await r.step('promoteDownstream', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/stages/{stage}/promotions/downstream', { params: { path: { ...p, stage: 'test' } }, body: { freight } });
    r.answered('promoteDownstream', response.status, 201, error);
    downstream = data?.items[0]?.metadata?.name ?? '';
    check(data?.items.length === 1 && data.items[0].spec?.stage === 'uat', 'downstream');
  });
  await r.step('streamProjectPromotions', async () => {
    const items = await readStream(t, r, 'streamProjectPromotions', `/projects/${project}/promotion-events`, { item: 'promotion' } as Events<S['PromotionEvent']>);
    check(items.length === 2, `snapshot ${items.length}`);
  });
  await r.step('streamStagePromotions', async () => {
    const items = await readStream(t, r, 'streamStagePromotions', `/projects/${project}/stages/test/promotions/events`, { item: 'promotion' } as Events<S['PromotionEvent']>);
    check(items.length === 1, `snapshot ${JSON.stringify(items.map((p) => [p.metadata?.name, p.spec?.stage, p.metadata?.resourceVersion]))}`);
  });
  await r.step('abortPromotion', async () => {
    const { error, response } = await c.POST('/projects/{project}/promotions/{promotion}/abort', { params: { path: { ...p, promotion: downstream } } });
    r.answered('abortPromotion', response.status, 200, error);
  });
  // test has no spec.verification: once its Promotion ends, its Freight
  // is verified at once, and can be verified again.
  const testStage = { params: { path: { ...p, stage: 'test' } } };
  await r.step('reverifyStage', async () => {
    for (let tries = 0; tries < 300; tries++) {
      const { data } = await c.GET('/projects/{project}/stages/{stage}', testStage);
      const vh: unknown = data?.status?.freightHistory?.[0]?.verificationHistory;
      if (Array.isArray(vh) && vh.length > 0) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const { data, error, response } = await c.POST('/projects/{project}/stages/{stage}/reverify', testStage);
    r.answered('reverifyStage', response.status, 200, error);
    check(!!data?.metadata?.annotations?.['kargo.akuity.io/reverify'], 'the reverify annotation');
  });
  await r.step('abortStageVerification', async () => {
    const { error, response } = await c.POST('/projects/{project}/stages/{stage}/abort-verification', testStage);
    r.answered('abortStageVerification', response.status, 200, error);
  });
  await r.step('deleteStage', async () => {
    const { response } = await c.DELETE('/projects/{project}/stages/{stage}', { params: { path: { ...p, stage: 'uat' } } });
    r.answered('deleteStage', response.status, 204);
  });
}

// Warehouses: their registry is not reachable from here, so discovery
// fails; the walk does not depend on it.
async function warehouses(t: Target, r: Suite, c: Client, project: string): Promise<void> {
  const p = { project };
  const w = { params: { path: { ...p, warehouse: 'w' } } };
  await r.step('createWarehouse', async () => {
    const body: S['Warehouse'] = { metadata: { name: 'w' }, spec: { subscriptions: [{ image: { repoURL: 'registry.invalid/app' } }] } };
    const { data, error, response } = await c.POST('/projects/{project}/warehouses', { params: { path: p }, body });
    r.answered('createWarehouse', response.status, 201, error);
    check(data?.spec?.freightCreationPolicy === 'Automatic', 'Kargo\'s default policy');
  });
  await r.step('listWarehouses', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/warehouses', { params: { path: p } });
    r.answered('listWarehouses', response.status, 200, error);
    check(data?.items.length === 1, `warehouses ${data?.items.length}`);
  });
  await r.step('getWarehouse', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/warehouses/{warehouse}', w);
    r.answered('getWarehouse', response.status, 200, error);
    check(data?.metadata?.name === 'w', 'the Warehouse');
  });
  await r.step('replaceWarehouse', async () => {
    // Its controller writes it too: a 409 is read again.
    for (let tries = 1; ; tries++) {
      const { data: have } = await c.GET('/projects/{project}/warehouses/{warehouse}', w);
      const { data, error, response } = await c.PUT('/projects/{project}/warehouses/{warehouse}', { ...w, body: { ...have, spec: { ...have!.spec, shard: 'a' } } });
      if (response.status === 409 && tries < 10) continue;
      r.answered('replaceWarehouse', response.status, 200, error);
      check(data?.spec?.shard === 'a', 'shard');
      return;
    }
  });
  await r.step('refreshWarehouse', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/warehouses/{warehouse}/refresh', { params: { path: { ...p, warehouse: 'w' }, query: { wait: false } } });
    r.answered('refreshWarehouse', response.status, 200, error);
    check(!!data?.metadata?.annotations?.['kargo.akuity.io/refresh'], 'no refresh annotation');
  });
  await r.step('streamProjectWarehouses', async () => {
    const items = await readStream(t, r, 'streamProjectWarehouses', `/projects/${project}/warehouse-events`, { item: 'warehouse' } as Events<S['WarehouseEvent']>);
    check(items.length === 1 && items[0].metadata?.name === 'w', `snapshot ${JSON.stringify(items.map((p) => [p.metadata?.name, p.metadata?.resourceVersion]))}`);
  });
  await r.step('deleteWarehouse', async () => {
    const { response } = await c.DELETE('/projects/{project}/warehouses/{warehouse}', w);
    r.answered('deleteWarehouse', response.status, 204);
  });
}

// A project's ProjectConfig: created by a put without a resourceVersion,
// replaced by one with it, deleted.
async function projectConfig(r: Suite, c: Client, project: string): Promise<void> {
  const path = { params: { path: { project } } };
  await r.step('putProjectConfig', async () => {
    const body: S['ProjectConfig'] = { spec: { promotionPolicies: [{ stageSelector: { name: 'test' }, autoPromotionEnabled: true }] } };
    const { data, error, response } = await c.PUT('/projects/{project}/config', { ...path, body });
    r.answered('putProjectConfig', response.status, 201, error);
    check(data?.metadata?.name === project, 'named after the project');
  });
  await r.step('getProjectConfig', async () => {
    const { data: have, error, response } = await c.GET('/projects/{project}/config', path);
    r.answered('getProjectConfig', response.status, 200, error);
    const policies = [...(have?.spec?.promotionPolicies ?? []), { stage: 'uat' }];
    const { data, error: putError, response: put } = await c.PUT('/projects/{project}/config', { ...path, body: { ...have, spec: { ...have!.spec, promotionPolicies: policies } } });
    r.answered('putProjectConfig', put.status, 200, putError);
    check(data?.spec?.promotionPolicies?.length === 2, 'replaced');
  });
  await r.step('deleteProjectConfig', async () => {
    const { response } = await c.DELETE('/projects/{project}/config', path);
    r.answered('deleteProjectConfig', response.status, 204);
  });
}

// Argo Rollouts' analysis kinds, each with one web metric: an
// AnalysisTemplate, a ClusterAnalysisTemplate (in no project: named after
// this one) and an AnalysisRun.
async function analysis(t: Target, r: Suite, c: Client, project: string): Promise<void> {
  const p = { project };
  const spec: S['AnalysisTemplateSpec'] = { metrics: [{ name: 'health', count: 1, provider: { web: { url: 'http://health.invalid/' } } }] };
  const at = { params: { path: { ...p, analysisTemplate: 'health' } } };
  const cat = { params: { path: { clusterAnalysisTemplate: `${project}-health` } } };
  const ar = { params: { path: { ...p, analysisRun: 'health-1' } } };
  await r.step('createAnalysisTemplate', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/analysis-templates', { params: { path: p }, body: { metadata: { name: 'health' }, spec } });
    r.answered('createAnalysisTemplate', response.status, 201, error);
    check(data?.spec?.metrics?.[0]?.provider?.web?.url === 'http://health.invalid/', 'the web metric');
  });
  await r.step('listAnalysisTemplates', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/analysis-templates', { params: { path: p } });
    r.answered('listAnalysisTemplates', response.status, 200, error);
    check(data?.items.length === 1, `templates ${data?.items.length}`);
  });
  await r.step('getAnalysisTemplate', async () => {
    const { data: have, error, response } = await c.GET('/projects/{project}/analysis-templates/{analysisTemplate}', at);
    r.answered('getAnalysisTemplate', response.status, 200, error);
    const { data, error: putError, response: put } = await c.PUT('/projects/{project}/analysis-templates/{analysisTemplate}', { ...at, body: { ...have, spec: { ...have!.spec, dryRun: [{ metricName: 'health' }] } } });
    r.answered('replaceAnalysisTemplate', put.status, 200, putError);
    check(data?.spec?.dryRun?.length === 1, 'replaced');
  });
  await r.step('deleteAnalysisTemplate', async () => {
    const { response } = await c.DELETE('/projects/{project}/analysis-templates/{analysisTemplate}', at);
    r.answered('deleteAnalysisTemplate', response.status, 204);
  });
  await r.step('createClusterAnalysisTemplate', async () => {
    const { error, response } = await c.POST('/cluster-analysis-templates', { body: { metadata: { name: `${project}-health` }, spec } });
    r.answered('createClusterAnalysisTemplate', response.status, 201, error);
    const { data, error: listError, response: list } = await c.GET('/cluster-analysis-templates');
    r.answered('listClusterAnalysisTemplates', list.status, 200, listError);
    check(!!data?.items.some((i) => i.metadata?.name === `${project}-health`), 'listed');
  });
  await r.step('getClusterAnalysisTemplate', async () => {
    const { data: have, error, response } = await c.GET('/cluster-analysis-templates/{clusterAnalysisTemplate}', cat);
    r.answered('getClusterAnalysisTemplate', response.status, 200, error);
    const { error: putError, response: put } = await c.PUT('/cluster-analysis-templates/{clusterAnalysisTemplate}', { ...cat, body: { ...have, spec: { ...have!.spec, dryRun: [{ metricName: '.*' }] } } });
    r.answered('replaceClusterAnalysisTemplate', put.status, 200, putError);
    const { response: del } = await c.DELETE('/cluster-analysis-templates/{clusterAnalysisTemplate}', cat);
    r.answered('deleteClusterAnalysisTemplate', del.status, 204);
  });
  await r.step('createAnalysisRun', async () => {
    const { data, error, response } = await c.POST('/projects/{project}/analysis-runs', { params: { path: p }, body: { metadata: { name: 'health-1' }, spec: { metrics: spec.metrics } } });
    r.answered('createAnalysisRun', response.status, 201, error);
    check(data?.status?.phase === '', `phase ${data?.status?.phase}`);
  });
  await r.step('listAnalysisRuns', async () => {
    const { data, error, response } = await c.GET('/projects/{project}/analysis-runs', { params: { path: p } });
    r.answered('listAnalysisRuns', response.status, 200, error);
    check(data?.items.length === 1, `runs ${data?.items.length}`);
    const { data: run, error: getError, response: get } = await c.GET('/projects/{project}/analysis-runs/{analysisRun}', ar);
    r.answered('getAnalysisRun', get.status, 200, getError);
    check(run?.spec?.metrics?.[0]?.name === 'health', 'the run');
  });
  await r.step('streamProjectAnalysisRuns', async () => {
    const items = await readStream(t, r, 'streamProjectAnalysisRuns', `/projects/${project}/analysis-run-events`, { item: 'analysisrun' } as Events<S['AnalysisRunEvent']>);
    check(items.length === 1 && items[0].metadata?.name === 'health-1' && !items[0].deleted, `snapshot ${items.length}`);
  });
  await r.step('deleteAnalysisRun', async () => {
    const { response } = await c.DELETE('/projects/{project}/analysis-runs/{analysisRun}', ar);
    r.answered('deleteAnalysisRun', response.status, 204);
  });
}
