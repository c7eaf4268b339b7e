// Compiled (tsc --strict, no emit) against the TypeScript SDKs that
// openapi-typescript and @hey-api/openapi-ts generate from api/openapi.yaml
// (make lint-openapi): the stream events of each are typed, as a client
// handling them in a switch needs. If the document stopped describing them,
// this would not compile.
import type { components, paths } from './gen/openapi-typescript';
import type { ActionStreamEvent, RunStreamEvent, StageStreamEvent, Phase } from './gen/hey-api/types.gen';

type OTActionEvent = components['schemas']['ActionStreamEvent'];
type OTStreamBody = paths['/projects/{project}/domains/{domain}/runs/{run}/events']['get']['responses'][200]['content']['text/event-stream'];

// openapi-typescript: the stream's body is the event union.
const same: OTActionEvent extends OTStreamBody ? true : false = true;

function describeOT(e: OTActionEvent): string {
  switch (e.event) {
    case 'action': {
      const phase: components['schemas']['Phase'] = e.data.phase;
      return `${e.data.actionId.name} ${phase} deleted=${e.data.deleted}`;
    }
    case 'synced':
      return `synced resumed=${e.data.resumed} count=${e.data.count}`;
    case 'reset':
      return `reset: ${e.data.reason}`;
  }
}

// @hey-api/openapi-ts: the same unions, as named types.
function describeHey(e: ActionStreamEvent): string {
  switch (e.event) {
    case 'action': {
      const phase: Phase = e.data.phase;
      return `${e.data.actionId.name} ${phase}`;
    }
    case 'synced':
      return `synced ${e.data.count}`;
    case 'reset':
      return e.data.reason;
  }
}

function describeRun(e: RunStreamEvent): string {
  return e.event === 'run' ? `${e.data.run.name} ${e.data.phase} deleted=${e.data.deleted}` : e.event;
}

// Stage streams: the data is the Kubernetes object plus deleted.
type OTStageBody = paths['/projects/{project}/stage-events']['get']['responses'][200]['content']['text/event-stream'];
function describeStage(e: OTStageBody): string {
  if (e.event !== 'stage') return e.event;
  const ready = e.data.status?.conditions?.find((c) => c.type === 'Ready');
  return `${e.data.metadata?.name} ready=${ready?.status} deleted=${e.data.deleted}`;
}

function describeStageHey(e: StageStreamEvent): string {
  return e.event === 'stage' ? `${e.data.spec?.requestedFreight?.length} requests` : e.event;
}

export { same, describeOT, describeHey, describeRun, describeStage, describeStageHey };
