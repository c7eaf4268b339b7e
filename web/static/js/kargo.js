// @ts-check
// How the Kargo pages read a Stage, as Kargo's UI does (phase, health,
// freight, last promotion, refresh), and Kargo's names. Shared by the
// pipeline (stages.js, pipeline.js), the Stage page (stage.js) and the
// Promotion pages.
import { h } from './dom.js';
import { MAX, validName } from './api.js';
import { ms } from './format.js';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** validProject: a Kargo project is a namespace (a DNS label). */
export function validProject(p) {
  return validName(p, MAX.project);
}

/** validStageName: a Stage's name is a DNS subdomain, as Kubernetes names are. */
export function validStageName(s) {
  return typeof s === 'string' && s.length >= 1 && s.length <= 253 && SUBDOMAIN.test(s);
}

// How Kargo's UI reads a Stage (ui/src/features/common/stage-status/utils.ts
// and the pipeline's stage node).

/** REFRESH is the annotation a refresh sets; the controller copies it to
 * status.lastHandledRefresh once it has reconciled. */
export const REFRESH = 'kargo.akuity.io/refresh';

/** The phases, in the order the page counts them. */
export const STAGE_PHASES = ['Promoting', 'Verifying', 'Reconciling', 'Failed', 'Ready', 'Steady'];

/** condition is the Stage's condition of a type, or undefined. */
export function condition(s, type) {
  const cs = (s.status && s.status.conditions) || [];
  return cs.find((c) => c.type === type);
}

const is = (s, type, status) => {
  const c = condition(s, type);
  return !!c && c.status === status;
};

/** stagePhase is Kargo's getStagePhase, but for one case: a Stage whose
 * last Promotion failed, errored or was aborted (Ready=False, reason
 * LastPromotion<Phase>) is Failed. Kargo's reads Verifying there, blue,
 * since Verified is Unknown when nothing new came to verify, and the red
 * showed only in the conditions. */
export function stagePhase(s) {
  if (is(s, 'Promoting', 'True')) return 'Promoting';
  const ready = condition(s, 'Ready');
  if (ready && ready.status === 'False' && (ready.reason || '').startsWith('LastPromotion')) return 'Failed';
  if (is(s, 'Verified', 'Unknown')) return 'Verifying';
  if (is(s, 'Reconciling', 'True')) return 'Reconciling';
  if (is(s, 'Ready', 'False')) return 'Failed';
  if (is(s, 'Ready', 'True')) return 'Ready';
  return 'Steady';
}

/** health is status.health.status, or "" when not assessed. */
export function health(s) {
  return (s.status && s.status.health && s.status.health.status) || '';
}

/** currentFreight is the Freight of the current collection, per origin. */
export function currentFreight(s) {
  const hist = (s.status && s.status.freightHistory) || [];
  const cur = hist[0];
  if (!cur || !cur.items) return [];
  return Object.entries(cur.items).map(([key, f]) => ({ key, name: (f && f.name) || '', origin: (f && f.origin) || null }))
    .filter((f) => f.name)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** freightText is the current Freight in a few words, "" for none. */
export function freightText(s) {
  const names = currentFreight(s).map((f) => f.name);
  const summary = (s.status && s.status.freightSummary) || '';
  if (names.length === 1) return names[0];
  if (names.length > 1) return summary || names.join(', ');
  return noFreight(summary) ? '' : summary;
}

/** noFreight: a freightSummary that says there is none ("0/1 Fulfilled",
 * or "N/A" on a control-flow Stage). */
export function noFreight(summary) {
  return !summary || summary === 'N/A' || /^0\//.test(summary);
}

/** isControlFlow: a Stage with no promotion steps only passes Freight on. */
export function isControlFlow(s) {
  const t = s.spec && s.spec.promotionTemplate;
  return !(t && t.spec && Array.isArray(t.spec.steps) && t.spec.steps.length);
}

/** refreshToken is the refresh the Stage was last asked for ("" if none). */
export function refreshToken(s) {
  return (s.metadata && s.metadata.annotations && s.metadata.annotations[REFRESH]) || '';
}

/** refreshPending: asked for a refresh the controller has not handled yet. */
export function refreshPending(s) {
  const t = refreshToken(s);
  return t !== '' && t !== ((s.status && s.status.lastHandledRefresh) || '');
}

/** sources is what a Stage takes Freight from: Warehouses directly, and
 * Stages; key changes exactly when its edges in the graph do. */
export function sources(s) {
  const direct = [];
  const up = [];
  for (const r of (s.spec && s.spec.requestedFreight) || []) {
    if (!r) continue;
    const src = r.sources || {};
    if (src.direct && r.origin && r.origin.name) direct.push(r.origin.name);
    for (const u of src.stages || []) up.push(u);
  }
  direct.sort();
  up.sort();
  return { direct, up, key: direct.join(',') + '|' + up.join(',') };
}

// How Kargo's UI reads a Warehouse (the pipeline's warehouse node,
// ui/src/features/project/pipelines/nodes/warehouse-node.tsx).

/** warehouseState is Kargo's reading of a Warehouse's conditions: Failed
 * when Healthy is False, or Ready is False while it is not reconciling
 * (a failed discovery); Discovering while Reconciling is True; Ready; and
 * Pending before its first discovery. */
export function warehouseState(w) {
  const ready = condition(w, 'Ready');
  const reconciling = condition(w, 'Reconciling');
  if (is(w, 'Healthy', 'False') || (ready && ready.status === 'False' && !(reconciling && reconciling.status === 'True'))) return 'Failed';
  if (reconciling && reconciling.status === 'True') return 'Discovering';
  if (ready && ready.status === 'True') return 'Ready';
  return 'Pending';
}

/** warehouseProblem is what a failed Warehouse's conditions say: the
 * message of Healthy=False, else of Ready=False ("" when none is). */
export function warehouseProblem(w) {
  for (const type of ['Healthy', 'Ready']) {
    const c = condition(w, type);
    if (c && c.status === 'False') return c.message || c.reason || `${type} is False`;
  }
  return '';
}

/** discoveredAt is when the Warehouse last discovered its artifacts
 * (status.discoveredArtifacts.discoveredAt), or "". A failed discovery
 * leaves the last one that worked. */
export function discoveredAt(w) {
  const d = w.status && w.status.discoveredArtifacts;
  return d && typeof d.discoveredAt === 'string' ? d.discoveredAt : '';
}

/** subscriptions are a Warehouse's subscriptions, each as [kind, repository]. */
export function subscriptions(w) {
  /** @type {[string, string][]} */
  const out = [];
  for (const sub of (w.spec && w.spec.subscriptions) || []) {
    if (!sub) continue;
    for (const kind of /** @type {const} */ (['git', 'image', 'chart'])) {
      const s = sub[kind];
      if (!s) continue;
      const repo = String(s.repoURL || '?');
      out.push([kind, kind === 'chart' && s.name ? `${repo.replace(/\/+$/, '')}/${s.name}` : repo]);
    }
  }
  return out;
}

/** stageColor is the colour Kargo's UI gives a Stage (annotation
 * kargo.akuity.io/color), if it is a plain colour name or hex. */
export function stageColor(s) {
  const c = s.metadata && s.metadata.annotations && s.metadata.annotations['kargo.akuity.io/color'];
  return c && /^([a-z]{3,20}|#[0-9a-f]{3,8})$/i.test(c) ? c : null;
}

/** relTime: "just now", "42s ago", "5m ago", "3h ago", "2d ago". */
export function relTime(iso, now = Date.now()) {
  const t = ms(iso);
  if (!Number.isFinite(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ago`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr}h ago`;
  return `${Math.floor(hr / 24)}d ago`;
}

/** stageBadge is a Stage phase label: colour, dot and the phase in words. */
export function stageBadge(phase) {
  return h('span', { class: 'badge sp-' + phase }, h('span', { class: 'dot', 'aria-hidden': 'true' }), phase);
}

/** updateStageBadge changes a badge made by stageBadge to another phase. */
export function updateStageBadge(el, phase) {
  const cls = 'badge sp-' + phase;
  if (el.className !== cls) el.className = cls;
  if (el.lastChild.textContent !== phase) el.lastChild.textContent = phase;
}

/** healthText is a health state in words that say what they are about. */
export function healthText(state) {
  switch (state) {
    case '': return 'Health —';
    case 'Unknown': return 'Health unknown';
    case 'NotApplicable': return 'Health n/a';
    default: return state;
  }
}

/** healthClass colours a health state. */
export function healthClass(state) {
  return 'sh-' + (state || 'None');
}
