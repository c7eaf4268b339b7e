// Every operation of the document through the SDK @hey-api/openapi-ts
// generates, with the token (its `auth`) and nothing else; every stream
// through the SDK's own SSE client, which yields each event's parsed data:
// its types must say so.
import { createClient } from '../gen/hey-api/client';
import * as sdk from '../gen/hey-api/sdk.gen';
import type {
  ActionEvent,
  ActionStreamData,
  AnalysisTemplateSpec,
  EnqueueRequest,
  LogStreamData,
  ProjectConfig,
  ResetEvent,
  Stage,
  Warehouse,
  StreamRunEventsResponses,
  SyncedEvent,
} from '../gen/hey-api/types.gen';
import type { ServerSentEventsResult } from '../gen/hey-api/client';
import { check, Equal, Suite, Target, typed } from './common';

// What the SDK's stream of a run yields: the data of its events.
type Yielded<R> = ServerSentEventsResult<R>['stream'] extends AsyncGenerator<infer Y> ? Y : never;
typed<Equal<Yielded<StreamRunEventsResponses>, ActionStreamData>>(true);
typed<Equal<ActionStreamData, ActionEvent | SyncedEvent | ResetEvent>>(true);

const isSynced = (d: object): d is SyncedEvent => 'resumed' in d && 'count' in d;
const isReset = (d: object): d is ResetEvent => 'reason' in d && Object.keys(d).length === 1;

/**
 * Reads a stream the SDK opened up to its `synced` event, returning the
 * items before it (each checked to be data, not an envelope), and closes it.
 */
async function untilSynced<D extends object>(open: (signal: AbortSignal) => Promise<{ stream: AsyncGenerator<D> }>): Promise<Exclude<D, SyncedEvent | ResetEvent>[]> {
  const stop = new AbortController();
  const { stream } = await open(stop.signal);
  const items: Exclude<D, SyncedEvent | ResetEvent>[] = [];
  try {
    for await (const d of stream) {
      check(!('event' in d) && !('data' in d), `the SDK yielded an envelope: ${JSON.stringify(d)}`);
      if (isSynced(d)) return items;
      if (isReset(d)) items.length = 0;
      else items.push(d as Exclude<D, SyncedEvent | ResetEvent>);
    }
    throw new Error('the stream ended before synced');
  } finally {
    stop.abort();
  }
}

export async function heyApi(t: Target): Promise<Suite> {
  const r = new Suite('hey-api');
  // The token for the bearer scheme only: given as a plain string, the SDK
  // would also send it as the session cookie, the document's other scheme.
  const client = createClient({ baseUrl: `${t.url}/api/v1`, auth: (a) => (a.scheme === 'bearer' ? t.token : undefined) });
  // Streams: the SDK's SSE client exposes no response, so a fetch that
  // notes the status (and changes nothing), and one try.
  const sse = (op: string, signal: AbortSignal) => ({
    client,
    signal,
    sseMaxRetryAttempts: 1,
    onSseError: (e: unknown) => r.fail(op, `SSE: ${e}`),
    fetch: async (req: RequestInfo | URL, init?: RequestInit) => {
      const res = await fetch(req, init);
      r.record(op, res.status);
      return res;
    },
  });
  const run = { project: `${t.prefix}h`, domain: 'dev', name: 'r1' };
  const path = { project: run.project, domain: run.domain, run: run.name };
  const a0 = { ...path, action: 'a0' };

  await r.step('getOpenAPI', async () => {
    const { data, response } = await sdk.getOpenApi({ client });
    r.answered('getOpenAPI', response?.status, 200);
    check(data instanceof Blob && (await data.text()).startsWith('openapi: 3.0'), `not the YAML document: ${typeof data}`);
  });
  await r.step('getOpenAPIJSON', async () => {
    const { data, response } = await sdk.getOpenApijson({ client });
    r.answered('getOpenAPIJSON', response?.status, 200);
    check(data?.openapi === '3.0.3' && '/actions' in (data?.paths ?? {}), 'not the document');
  });
  await r.step('getSession', async () => {
    const { data, error, response } = await sdk.getSession({ client });
    r.answered('getSession', response?.status, 200, error);
    check(data?.subject === 'admin', `subject ${data?.subject}`);
  });
  await r.step('createSession', async () => {
    const { data, error, response } = await sdk.createSession({ client, body: { token: t.token } });
    r.answered('createSession', response?.status, 200, error);
    check(data?.subject === 'admin', 'no session');
  });
  await r.step('deleteSession', async () => {
    const { error, response } = await sdk.deleteSession({ client });
    r.answered('deleteSession', response?.status, 204, error);
  });

  const spec = (name: string, parent?: string): EnqueueRequest => ({
    action: { actionId: { run, name }, parentActionName: parent, task: { taskTemplate: { type: 'external' } } },
  });
  await r.step('enqueueAction', async () => {
    let { data, error, response } = await sdk.enqueueAction({ client, body: spec('a0') });
    r.answered('enqueueAction', response?.status, 201, error);
    check(data?.phase === 'QUEUED', `phase ${data?.phase}`);
    ({ error, response } = await sdk.enqueueAction({ client, body: spec('a0') }));
    r.answered('enqueueAction', response?.status, 200, error);
    ({ error, response } = await sdk.enqueueAction({ client, body: spec('c1', 'a0') }));
    r.answered('enqueueAction', response?.status, 201, error);
  });
  await r.step('putActionStatus', async () => {
    const { data, error, response } = await sdk.putActionStatus({ client, path: a0, body: { attempt: 1, status: { phase: 'RUNNING' } } });
    r.answered('putActionStatus', response?.status, 200, error);
    check(data?.phase === 'RUNNING', `phase ${data?.phase}`);
  });
  await r.step('appendActionLogs', async () => {
    const { data, error, response } = await sdk.appendActionLogs({ client, path: a0, body: { attempt: 1, text: 'hello\n' } });
    r.answered('appendActionLogs', response?.status, 200, error);
    check(data?.size === 6, `size ${data?.size}`);
  });
  await r.step('getActionLogs', async () => {
    let { data, error, response } = await sdk.getActionLogs({ client, path: a0, query: { attempt: 1 } });
    r.answered('getActionLogs', response?.status, 200, error);
    check(data === 'hello\n', `log ${data}`);
    ({ data, error, response } = await sdk.getActionLogs({ client, path: a0, query: { attempt: 1 }, headers: { Range: 'bytes=-3' } }));
    r.answered('getActionLogs', response?.status, 206, error);
    check(data === 'lo\n', `tail ${data}`);
  });
  await r.step('listProjects', async () => {
    const { data, error, response } = await sdk.listProjects({ client });
    r.answered('listProjects', response?.status, 200, error);
    check(!!data?.items.some((p) => p.project === run.project), 'the project is not listed');
  });
  await r.step('listRuns', async () => {
    for (const [phase, found] of [[['RUNNING', 'SUCCEEDED'], true], [['FAILED', 'TIMED_OUT'], false]] as const) {
      const { data, error, response } = await sdk.listRuns({ client, path: { project: run.project, domain: run.domain }, query: { phase: [...phase] } });
      r.answered('listRuns', response?.status, 200, error);
      check(data?.items.some((x) => x.run.name === run.name) === found, `runs in ${phase}`);
    }
  });
  await r.step('getRun', async () => {
    const { data, error, response } = await sdk.getRun({ client, path });
    r.answered('getRun', response?.status, 200, error);
    check(data?.actionCount === 2, `actions ${data?.actionCount}`);
  });
  await r.step('listRunActions', async () => {
    const { data, error, response } = await sdk.listRunActions({ client, path });
    r.answered('listRunActions', response?.status, 200, error);
    check(data?.items.length === 2, `actions ${data?.items.length}`);
    // Filtered, as the SDK sends an array.
    const phase = data?.items.find((a) => a.actionId.name === 'c1')?.phase ?? 'QUEUED';
    const only = await sdk.listRunActions({ client, path, query: { phase: [phase, 'TIMED_OUT'], q: 'C1' } });
    r.answered('listRunActions', only.response?.status, 200, only.error);
    check(only.data?.items.map((a) => a.actionId.name).join() === 'c1', `filtered ${JSON.stringify(only.data?.items.map((a) => a.actionId.name))}`);
  });
  await r.step('getAction', async () => {
    const { data, error, response } = await sdk.getAction({ client, path: { ...path, action: 'c1' } });
    r.answered('getAction', response?.status, 200, error);
    check(data?.parentActionName === 'a0', 'parent');
  });
  await r.step('listChildActions', async () => {
    const { data, error, response } = await sdk.listChildActions({ client, path: a0 });
    r.answered('listChildActions', response?.status, 200, error);
    check(data?.items.length === 1, 'children');
  });

  await r.step('streamActionEvents', async () => {
    const items = await untilSynced((signal) => sdk.streamActionEvents({ ...sse('streamActionEvents', signal), path: a0 }));
    check(items.map((a) => a.actionId.name).sort().join() === 'a0,c1', `snapshot ${items.length}`);
  });
  await r.step('streamRunEvents', async () => {
    const items = await untilSynced((signal) => sdk.streamRunEvents({ ...sse('streamRunEvents', signal), path }));
    check(items.length === 2 && items.every((a) => typeof a.deleted === 'boolean'), `snapshot ${items.length}`);
    const only = await untilSynced((signal) => sdk.streamRunEvents({ ...sse('streamRunEvents', signal), path, query: { q: 'c1' } }));
    check(only.map((a) => a.actionId.name).join() === 'c1', `filtered snapshot ${only.length}`);
  });
  await r.step('streamRunSummaries', async () => {
    const items = await untilSynced((signal) => sdk.streamRunSummaries({ ...sse('streamRunSummaries', signal), path: { project: run.project, domain: run.domain } }));
    check(items.length === 1 && items[0].run.name === run.name && items[0].phase === 'RUNNING', 'snapshot');
  });
  await r.step('streamProjects', async () => {
    const items = await untilSynced((signal) => sdk.streamProjects(sse('streamProjects', signal)));
    check(items.some((p) => p.project === run.project), 'the project is not in the stream');
  });
  await r.step('streamActionLogs', async () => {
    const stop = new AbortController();
    const { stream } = await sdk.streamActionLogs({ ...sse('streamActionLogs', stop.signal), path: a0, query: { attempt: 1 } });
    try {
      const first = await stream.next();
      const d: LogStreamData | undefined = first.value ?? undefined;
      check(!!d && 'text' in d && d.text === 'hello\n' && d.offset === 0, `log ${JSON.stringify(d)}`);
    } finally {
      stop.abort();
    }
  });

  await r.step('abortAction', async () => {
    let { data, error, response } = await sdk.abortAction({ client, path: { ...path, action: 'c1' } });
    r.answered('abortAction', response?.status, 202, error);
    check(data?.phase === 'ABORTED' && data.abortReason === 'aborted by user', `abort ${data?.phase} ${data?.abortReason}`);
    ({ data, error, response } = await sdk.abortAction({ client, path: a0, body: { reason: 'done here' } }));
    r.answered('abortAction', response?.status, 202, error);
    check(data?.abortReason === 'done here', 'reason');
  });
  await r.step('deleteAction', async () => {
    const { error, response } = await sdk.deleteAction({ client, path: { ...path, action: 'c1' } });
    r.answered('deleteAction', response?.status, 202, error);
  });
  await r.step('deleteRun', async () => {
    const { error, response } = await sdk.deleteRun({ client, path });
    r.answered('deleteRun', response?.status, 202, error);
  });

  await kargo(r, client, sse, `${t.prefix}hk`);
  await warehouses(r, client, sse, `${t.prefix}hw`);
  await projectConfig(r, client, `${t.prefix}hc`);
  await analysis(r, client, sse, `${t.prefix}ha`);
  return r;
}

type Client = ReturnType<typeof createClient>;
type SSE = (op: string, signal: AbortSignal) => { client: Client; signal: AbortSignal };

async function kargo(r: Suite, client: Client, sse: SSE, project: string): Promise<void> {
  const p = { project };
  const stage = (name: string, sources: { direct?: boolean; stages?: string[] }): Stage => ({
    metadata: { name },
    spec: { requestedFreight: [{ origin: { kind: 'Warehouse', name: 'w' }, sources }], promotionTemplate: { spec: { steps: [{ uses: 'echo', as: 'hello' }] } } },
  });
  await r.step('createStage', async () => {
    for (const s of [stage('test', { direct: true }), stage('uat', { stages: ['test'] })]) {
      const { error, response } = await sdk.createStage({ client, path: p, body: s });
      r.answered('createStage', response?.status, 201, error);
    }
  });
  await r.step('listStages', async () => {
    const { data, error, response } = await sdk.listStages({ client, path: p });
    r.answered('listStages', response?.status, 200, error);
    check(data?.items.length === 2, `stages ${data?.items.length}`);
  });
  await r.step('getStage', async () => {
    const { data, error, response } = await sdk.getStage({ client, path: { ...p, stage: 'test' } });
    r.answered('getStage', response?.status, 200, error);
    check(data?.metadata?.name === 'test', 'the Stage');
  });
  await r.step('replaceStage', async () => {
    // A Stage changed since it was read (its controller writes it too) is
    // 409: read it again, as the document says.
    for (let tries = 1; ; tries++) {
      const { data: test } = await sdk.getStage({ client, path: { ...p, stage: 'test' } });
      const { data, error, response } = await sdk.replaceStage({ client, path: { ...p, stage: 'test' }, body: { ...test, spec: { ...test?.spec, shard: 'a' } } });
      if (response?.status === 409 && tries < 10) continue;
      r.answered('replaceStage', response?.status, 200, error);
      check(data?.spec?.shard === 'a', 'shard');
      return;
    }
  });
  await r.step('refreshStage', async () => {
    const { data, error, response } = await sdk.refreshStage({ client, path: { ...p, stage: 'test' }, query: { wait: true } });
    r.answered('refreshStage', response?.status, 200, error);
    check(!!data?.status?.lastHandledRefresh, 'not handled');
  });
  await r.step('streamProjectStages', async () => {
    const items = await untilSynced((signal) => sdk.streamProjectStages({ ...sse('streamProjectStages', signal), path: p }));
    check(items.length === 2 && items.every((s) => s.deleted === false), `snapshot ${items.length}`);
  });
  await r.step('streamStage', async () => {
    const items = await untilSynced((signal) => sdk.streamStage({ ...sse('streamStage', signal), path: { ...p, stage: 'test' } }));
    check(items.length === 1 && items[0].metadata?.name === 'test', `snapshot ${items.length}`);
  });

  let freight = '';
  await r.step('createFreight', async () => {
    const { data, error, response } = await sdk.createFreight({
      client,
      path: p,
      body: { origin: { kind: 'Warehouse', name: 'w' }, images: [{ repoURL: 'ghcr.io/example/app', tag: '1.0.0', digest: 'sha256:1' }] },
    });
    r.answered('createFreight', response?.status, 201, error);
    freight = data?.metadata?.name ?? '';
  });
  await r.step('listFreight', async () => {
    const { data, error, response } = await sdk.listFreight({ client, path: p, query: { availableTo: 'test' } });
    r.answered('listFreight', response?.status, 200, error);
    check(data?.items.length === 1, `freight ${data?.items.length}`);
  });
  await r.step('getFreight', async () => {
    const { error, response } = await sdk.getFreight({ client, path: { ...p, freight } });
    r.answered('getFreight', response?.status, 200, error);
  });
  await r.step('approveFreight', async () => {
    const { data, error, response } = await sdk.approveFreight({ client, path: { ...p, freight }, query: { stage: 'uat' } });
    r.answered('approveFreight', response?.status, 200, error);
    check(!!data?.status?.approvedFor && 'uat' in data.status.approvedFor, 'not approved');
  });
  let promotion = '';
  await r.step('promoteToStage', async () => {
    const { data, error, response } = await sdk.promoteToStage({ client, path: { ...p, stage: 'test' }, body: { freight } });
    r.answered('promoteToStage', response?.status, 201, error);
    promotion = data?.metadata?.name ?? '';
  });
  await r.step('listPromotions', async () => {
    const { error, response } = await sdk.listPromotions({ client, path: p });
    r.answered('listPromotions', response?.status, 200, error);
  });
  await r.step('getPromotion', async () => {
    const { data, error, response } = await sdk.getPromotion({ client, path: { ...p, promotion } });
    r.answered('getPromotion', response?.status, 200, error);
    check(data?.spec?.stage === 'test', 'the Promotion');
  });
  await r.step('listStagePromotions', async () => {
    const { data, error, response } = await sdk.listStagePromotions({ client, path: { ...p, stage: 'test' } });
    r.answered('listStagePromotions', response?.status, 200, error);
    check(data?.items.length === 1, `promotions ${data?.items.length}`);
  });
  let downstream = '';
  await r.step('promoteDownstream', async () => {
    const { data, error, response } = await sdk.promoteDownstream({ client, path: { ...p, stage: 'test' }, body: { freight } });
    r.answered('promoteDownstream', response?.status, 201, error);
    downstream = data?.items[0]?.metadata?.name ?? '';
    check(data?.items.length === 1 && data.items[0].spec?.stage === 'uat', 'downstream');
  });
  await r.step('streamProjectPromotions', async () => {
    const items = await untilSynced((signal) => sdk.streamProjectPromotions({ ...sse('streamProjectPromotions', signal), path: p }));
    check(items.length === 2, `snapshot ${items.length}`);
  });
  await r.step('streamStagePromotions', async () => {
    const items = await untilSynced((signal) => sdk.streamStagePromotions({ ...sse('streamStagePromotions', signal), path: { ...p, stage: 'test' } }));
    check(items.length === 1, `snapshot ${items.length}`);
  });
  await r.step('abortPromotion', async () => {
    const { error, response } = await sdk.abortPromotion({ client, path: { ...p, promotion: downstream } });
    r.answered('abortPromotion', response?.status, 200, error);
  });
  // test has no spec.verification: once its Promotion ends, its Freight
  // is verified at once, and can be verified again.
  await r.step('reverifyStage', async () => {
    for (let tries = 0; tries < 300; tries++) {
      const { data } = await sdk.getStage({ client, path: { ...p, stage: 'test' } });
      const vh: unknown = data?.status?.freightHistory?.[0]?.verificationHistory;
      if (Array.isArray(vh) && vh.length > 0) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const { data, error, response } = await sdk.reverifyStage({ client, path: { ...p, stage: 'test' } });
    r.answered('reverifyStage', response?.status, 200, error);
    check(!!data?.metadata?.annotations?.['kargo.akuity.io/reverify'], 'the reverify annotation');
  });
  await r.step('abortStageVerification', async () => {
    const { error, response } = await sdk.abortStageVerification({ client, path: { ...p, stage: 'test' } });
    r.answered('abortStageVerification', response?.status, 200, error);
  });
  await r.step('deleteStage', async () => {
    const { error, response } = await sdk.deleteStage({ client, path: { ...p, stage: 'uat' } });
    r.answered('deleteStage', response?.status, 204, error);
  });
}

// Warehouses: their registry is not reachable from here, so discovery
// fails; the walk does not depend on it.
async function warehouses(r: Suite, client: Client, sse: SSE, project: string): Promise<void> {
  const p = { project };
  const path = { ...p, warehouse: 'w' };
  await r.step('createWarehouse', async () => {
    const body: Warehouse = { metadata: { name: 'w' }, spec: { subscriptions: [{ image: { repoURL: 'registry.invalid/app' } }] } };
    const { data, error, response } = await sdk.createWarehouse({ client, path: p, body });
    r.answered('createWarehouse', response?.status, 201, error);
    check(data?.spec?.freightCreationPolicy === 'Automatic', 'Kargo\'s default policy');
  });
  await r.step('listWarehouses', async () => {
    const { data, error, response } = await sdk.listWarehouses({ client, path: p });
    r.answered('listWarehouses', response?.status, 200, error);
    check(data?.items.length === 1, `warehouses ${data?.items.length}`);
  });
  await r.step('getWarehouse', async () => {
    const { data, error, response } = await sdk.getWarehouse({ client, path });
    r.answered('getWarehouse', response?.status, 200, error);
    check(data?.metadata?.name === 'w', 'the Warehouse');
  });
  await r.step('replaceWarehouse', async () => {
    // Its controller writes it too: a 409 is read again.
    for (let tries = 1; ; tries++) {
      const { data: have } = await sdk.getWarehouse({ client, path });
      const { data, error, response } = await sdk.replaceWarehouse({ client, path, body: { ...have, spec: { ...have!.spec, shard: 'a' } } });
      if (response?.status === 409 && tries < 10) continue;
      r.answered('replaceWarehouse', response?.status, 200, error);
      check(data?.spec?.shard === 'a', 'shard');
      return;
    }
  });
  await r.step('refreshWarehouse', async () => {
    const { data, error, response } = await sdk.refreshWarehouse({ client, path, query: { wait: false } });
    r.answered('refreshWarehouse', response?.status, 200, error);
    check(!!data?.metadata?.annotations?.['kargo.akuity.io/refresh'], 'no refresh annotation');
  });
  await r.step('streamProjectWarehouses', async () => {
    const items = await untilSynced((signal) => sdk.streamProjectWarehouses({ ...sse('streamProjectWarehouses', signal), path: p }));
    check(items.length === 1 && items[0].metadata?.name === 'w', `snapshot ${items.length}`);
  });
  await r.step('deleteWarehouse', async () => {
    const { error, response } = await sdk.deleteWarehouse({ client, path });
    r.answered('deleteWarehouse', response?.status, 204, error);
  });
}

// A project's ProjectConfig: created by a put without a resourceVersion,
// replaced by one with it, deleted.
async function projectConfig(r: Suite, client: Client, project: string): Promise<void> {
  const path = { project };
  await r.step('putProjectConfig', async () => {
    const body: ProjectConfig = { spec: { promotionPolicies: [{ stageSelector: { name: 'test' }, autoPromotionEnabled: true }] } };
    const { data, error, response } = await sdk.putProjectConfig({ client, path, body });
    r.answered('putProjectConfig', response?.status, 201, error);
    check(data?.metadata?.name === project, 'named after the project');
  });
  await r.step('getProjectConfig', async () => {
    const { data: have, error, response } = await sdk.getProjectConfig({ client, path });
    r.answered('getProjectConfig', response?.status, 200, error);
    const policies = [...(have?.spec?.promotionPolicies ?? []), { stage: 'uat' }];
    const { data, error: putError, response: put } = await sdk.putProjectConfig({ client, path, body: { ...have, spec: { ...have!.spec, promotionPolicies: policies } } });
    r.answered('putProjectConfig', put?.status, 200, putError);
    check(data?.spec?.promotionPolicies?.length === 2, 'replaced');
  });
  await r.step('deleteProjectConfig', async () => {
    const { error, response } = await sdk.deleteProjectConfig({ client, path });
    r.answered('deleteProjectConfig', response?.status, 204, error);
  });
}

// Argo Rollouts' analysis kinds, each with one web metric: an
// AnalysisTemplate, a ClusterAnalysisTemplate (in no project: named after
// this one) and an AnalysisRun.
async function analysis(r: Suite, client: Client, sse: SSE, project: string): Promise<void> {
  const p = { project };
  const spec: AnalysisTemplateSpec = { metrics: [{ name: 'health', count: 1, provider: { web: { url: 'http://health.invalid/' } } }] };
  const at = { ...p, analysisTemplate: 'health' };
  const cat = { clusterAnalysisTemplate: `${project}-health` };
  const ar = { ...p, analysisRun: 'health-1' };
  await r.step('createAnalysisTemplate', async () => {
    const { data, error, response } = await sdk.createAnalysisTemplate({ client, path: p, body: { metadata: { name: 'health' }, spec } });
    r.answered('createAnalysisTemplate', response?.status, 201, error);
    check(data?.spec?.metrics?.[0]?.provider?.web?.url === 'http://health.invalid/', 'the web metric');
  });
  await r.step('listAnalysisTemplates', async () => {
    const { data, error, response } = await sdk.listAnalysisTemplates({ client, path: p });
    r.answered('listAnalysisTemplates', response?.status, 200, error);
    check(data?.items.length === 1, `templates ${data?.items.length}`);
  });
  await r.step('getAnalysisTemplate', async () => {
    const { data: have, error, response } = await sdk.getAnalysisTemplate({ client, path: at });
    r.answered('getAnalysisTemplate', response?.status, 200, error);
    const { data, error: putError, response: put } = await sdk.replaceAnalysisTemplate({ client, path: at, body: { ...have, spec: { ...have!.spec, dryRun: [{ metricName: 'health' }] } } });
    r.answered('replaceAnalysisTemplate', put?.status, 200, putError);
    check(data?.spec?.dryRun?.length === 1, 'replaced');
  });
  await r.step('deleteAnalysisTemplate', async () => {
    const { error, response } = await sdk.deleteAnalysisTemplate({ client, path: at });
    r.answered('deleteAnalysisTemplate', response?.status, 204, error);
  });
  await r.step('createClusterAnalysisTemplate', async () => {
    const { error, response } = await sdk.createClusterAnalysisTemplate({ client, body: { metadata: { name: cat.clusterAnalysisTemplate }, spec } });
    r.answered('createClusterAnalysisTemplate', response?.status, 201, error);
    const { data, error: listError, response: list } = await sdk.listClusterAnalysisTemplates({ client });
    r.answered('listClusterAnalysisTemplates', list?.status, 200, listError);
    check(!!data?.items.some((i) => i.metadata?.name === cat.clusterAnalysisTemplate), 'listed');
  });
  await r.step('getClusterAnalysisTemplate', async () => {
    const { data: have, error, response } = await sdk.getClusterAnalysisTemplate({ client, path: cat });
    r.answered('getClusterAnalysisTemplate', response?.status, 200, error);
    const { error: putError, response: put } = await sdk.replaceClusterAnalysisTemplate({ client, path: cat, body: { ...have, spec: { ...have!.spec, dryRun: [{ metricName: '.*' }] } } });
    r.answered('replaceClusterAnalysisTemplate', put?.status, 200, putError);
    const { error: delError, response: del } = await sdk.deleteClusterAnalysisTemplate({ client, path: cat });
    r.answered('deleteClusterAnalysisTemplate', del?.status, 204, delError);
  });
  await r.step('createAnalysisRun', async () => {
    const { data, error, response } = await sdk.createAnalysisRun({ client, path: p, body: { metadata: { name: 'health-1' }, spec: { metrics: spec.metrics } } });
    r.answered('createAnalysisRun', response?.status, 201, error);
    check(data?.status?.phase === '', `phase ${data?.status?.phase}`);
  });
  await r.step('listAnalysisRuns', async () => {
    const { data, error, response } = await sdk.listAnalysisRuns({ client, path: p });
    r.answered('listAnalysisRuns', response?.status, 200, error);
    check(data?.items.length === 1, `runs ${data?.items.length}`);
    const { data: run, error: getError, response: get } = await sdk.getAnalysisRun({ client, path: ar });
    r.answered('getAnalysisRun', get?.status, 200, getError);
    check(run?.spec?.metrics?.[0]?.name === 'health', 'the run');
  });
  await r.step('streamProjectAnalysisRuns', async () => {
    const items = await untilSynced((signal) => sdk.streamProjectAnalysisRuns({ ...sse('streamProjectAnalysisRuns', signal), path: p }));
    check(items.length === 1 && items[0].metadata?.name === 'health-1' && !items[0].deleted, `snapshot ${items.length}`);
  });
  await r.step('deleteAnalysisRun', async () => {
    const { error, response } = await sdk.deleteAnalysisRun({ client, path: ar });
    r.answered('deleteAnalysisRun', response?.status, 204, error);
  });
}
