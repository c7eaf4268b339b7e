// @ts-check
// /projects/{p}/stages/{s}: one Stage, kept live by its stream: what it is
// (phase, health, freight, promotions), its conditions, what it requests
// and its promotion steps; Refresh (with a spinner until the controller
// has handled it) and Delete. Also its Promotions, live by the Stage's
// Promotion stream, Promote (promote-dialog.js), its Freight
// timeline (status.freightHistory, the current first) and the current
// Freight's verifications, with Reverify and Abort (verification.js).
import { h, setText } from './dom.js';
import { deleteStage, getStage } from './api.js';
import { pages, streams } from './urls.js';
import { connStates, live } from './stream.js';
import { fullTime, ms, timeEl } from './format.js';
import { confirmAbort } from './dialog.js';
import {
  currentFreight, health, healthClass, isControlFlow, noFreight,
  relTime, stageBadge, stagePhase, updateStageBadge,
} from './kargo.js';
import { byNewest, promotionList, promotionPhase } from './promotions.js';
import { openPromote } from './promote-dialog.js';
import { FreightIndex, freightTimeline } from './freight.js';
import { RefreshControl } from './stage-refresh.js';
import { VerificationPanel } from './verification.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * @param {HTMLElement} main @param {{project: string, stage: string}} params
 * @param {UI} ui @param {Scope} scope
 */
export function stagePage(main, { project, stage }, ui, scope) {
  ui.setTitle(`${stage} · Stages · ${project}`);
  ui.setCrumbs([{ label: project }, { label: 'Stages', href: pages.stages(project) }, { label: stage }]);

  const badge = stageBadge('Steady');
  badge.hidden = true;
  badge.id = 'stage-phase';
  const desc = h('p', { class: 'stage-desc muted', hidden: true });
  const refresh = new RefreshControl({
    project, stage, current: () => cur, gone: () => gone,
    onStage: (s) => { if (newer(s, cur)) show(s); },
  });
  const deleteBtn = h('button', { type: 'button', class: 'btn danger', id: 'delete-stage', disabled: true, text: 'Delete stage' });
  const promoteBtn = h('button', { type: 'button', class: 'btn primary', id: 'promote-stage', disabled: true, 'aria-haspopup': 'dialog', text: 'Promote' });
  const notice = h('div', { class: 'callout notice-stage', role: 'alert', hidden: true });
  const loading = h('p', { class: 'empty', text: 'Loading the stage…' });
  // The status first (it comes first on a phone), drawn on the right when
  // there is room.
  const left = h('div', { class: 'stage-col main-col' });
  const right = h('div', { class: 'stage-col side-col' });
  const body = h('div', { class: 'stage-layout', id: 'stage-detail', hidden: true }, right, left);
  main.append(
    h('div', { class: 'page-head' },
      h('div', { class: 'stage-title' },
        h('p', { class: 'eyebrow', text: `${project} · stage` }),
        h('h1', null, h('span', { class: 'mono', id: 'stage-name', text: stage }), badge),
        desc),
      h('div', { class: 'head-actions' }, promoteBtn, refresh.button, deleteBtn)),
    refresh.status, notice, loading, body);

  // The sections: each is drawn again only when what it shows changed.
  const sections = {
    facts: panel('Status', 'facts-title', right),
    freight: panel('Freight timeline', 'freight-title', right),
    promotions: panel('Promotions', 'promotions-title', left),
    conditions: panel('Conditions', 'conditions-title', left),
    steps: panel('Promotion steps', 'steps-title', left),
    requests: panel('Requested freight', 'requests-title', right),
  };
  // The verifications: a panel with buttons of its own, after the Promotions.
  const verification = new VerificationPanel({ project, stage, onStage: (s) => { if (newer(s, cur)) show(s); } });
  left.insertBefore(verification.el, left.children[1]);
  scope.add(() => verification.close());
  const drawn = {};
  sections.promotions.body.append(h('p', { class: 'empty', text: 'Loading the promotions…' }));
  function draw(name, key, build) {
    if (drawn[name] === key) return;
    drawn[name] = key;
    const sec = sections[name];
    // Keep the keyboard where it was.
    const focused = sec.body.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null;
    sec.body.replaceChildren(...[build()].flat());
    if (focused) sec.body.querySelector(`a[href="${CSS.escape(focused)}"]`)?.focus();
  }

  /** @type {import('./types.js').Stage | null} */
  let cur = null; // the Stage shown
  let gone = false;

  function show(s) {
    cur = s;
    gone = false;
    notice.hidden = true;
    loading.hidden = true;
    body.hidden = false;
    const phase = stagePhase(s);
    badge.hidden = false;
    updateStageBadge(badge, phase);
    badge.dataset.phase = phase;
    const d = (s.metadata.annotations || {})['kargo.akuity.io/description'] || '';
    setText(desc, d);
    desc.hidden = !d;
    deleteBtn.disabled = false;
    // A control-flow Stage has no steps to run: nothing is promoted to it.
    promoteBtn.hidden = isControlFlow(s);
    promoteBtn.disabled = false;
    drawAll();
    refresh.update();
    verification.update(s);
  }

  function drawAll() {
    const s = cur;
    if (!s) return;
    const st = s.status || {};
    const now = Date.now();
    const lp = st.lastPromotion;
    draw('facts', JSON.stringify([index.version, st.health, st.freightHistory && st.freightHistory[0], st.freightSummary, st.currentPromotion, lp, st.lastHandledRefresh,
      st.observedGeneration, s.metadata.generation, s.spec && s.spec.shard, stagePhase(s), lp && lp.finishedAt ? relTime(lp.finishedAt, now) : '']), () => facts(s, now, project, index));
    draw('conditions', JSON.stringify(st.conditions || []), () => conditions(st.conditions || []));
    draw('steps', JSON.stringify([s.spec && s.spec.promotionTemplate, s.spec && s.spec.verification]), () => steps(s));
    draw('requests', JSON.stringify((s.spec && s.spec.requestedFreight) || []), () => requests(project, s));
    draw('freight', JSON.stringify([st.freightHistory || [], index.version, Math.floor(now / 60000)]), () => freightTimeline(s, index, now));
    drawPromotions();
  }

  // The Stage's Promotions, newest first, from their stream.
  function drawPromotions() {
    if (!promosSynced) return;
    const items = [...promos.items.values()].sort(byNewest);
    const current = cur && cur.status && cur.status.currentPromotion ? cur.status.currentPromotion.name : '';
    const key = JSON.stringify([index.version, current, items.slice(0, 50).map((pr) => [pr.metadata.name, promotionPhase(pr), pr.status, pr.spec && pr.spec.freight]), items.length]);
    draw('promotions', key, () => promotionList(project, items, index, current));
  }

  function showGone(message) {
    gone = true;
    cur = null;
    loading.hidden = true;
    body.hidden = true;
    badge.hidden = true;
    notice.className = 'callout sp-Failed notice-stage';
    notice.replaceChildren(h('p', { text: message }), h('p', null, h('a', { href: pages.stages(project), text: `All stages of ${project}` })));
    notice.hidden = false;
    deleteBtn.disabled = true;
    promoteBtn.disabled = true;
    refresh.update();
    verification.update(null);
  }

  promoteBtn.addEventListener('click', () => {
    if (!cur || gone) return;
    openPromote({ project, stage: cur });
  });

  deleteBtn.addEventListener('click', () => confirmAbort({
    heading: `Delete stage ${stage}?`,
    text: `The Stage goes from project ${project}, with its status and history. Stages downstream of it no longer get Freight through it. This cannot be undone.`,
    confirm: 'Delete stage',
    noReason: true,
    run: () => deleteStage(project, stage),
    done: () => ui.navigate(pages.stages(project)),
  }));

  const conn = connStates(ui.setConn);
  const stageLive = live(scope, {
    url: streams.stage(project, stage),
    event: 'stage',
    key: (s) => s.metadata.name,
    deleted: (s) => s.deleted === true,
    apply: (changes) => {
      if (!changes.has(stage)) return;
      const s = changes.get(stage);
      if (s === null) showGone(`Stage ${stage} was deleted.`);
      else if (newer(s, cur)) show(s);
    },
    onSynced: () => {
      if (!stageLive.items.has(stage) && !gone) showGone(`There is no stage ${stage} in project ${project}.`);
    },
    onState: conn('stage'),
  }, () => drawAll());

  // The aliases of the Freight that Promotions and the history name.
  const index = new FreightIndex(project, drawAll);
  scope.add(() => index.stop());
  let promosSynced = false;
  const promos = live(scope, {
    url: streams.stagePromotions(project, stage),
    event: 'promotion',
    key: (pr) => pr.metadata.name,
    deleted: (pr) => pr.deleted === true,
    apply: () => drawPromotions(),
    onSynced: () => {
      promosSynced = true;
      drawPromotions();
    },
    onState: conn('promotions'),
  }, () => drawAll());

  // First the Stage (a 404 says there is none, without a stream), then
  // its stream.
  getStage(project, stage).then(
    (s) => {
      show(s);
      stageLive.start();
      promos.start();
      index.load();
    },
    (e) => {
      if (e.status === 404) {
        showGone(`There is no stage ${stage} in project ${project}.`);
        return;
      }
      refresh.say(e.message);
      stageLive.start();
      promos.start();
      index.load();
    });

  scope.interval(drawAll, 15000);
}

/** newer: a is a later version than b (resource versions compare as
 * numbers where both are numbers, as Kubernetes' etcd ones are). */
function newer(a, b) {
  if (!b) return true;
  const x = Number(a.metadata && a.metadata.resourceVersion);
  const y = Number(b.metadata && b.metadata.resourceVersion);
  if (!Number.isFinite(x) || !Number.isFinite(y)) return true;
  if (a.metadata.uid && b.metadata.uid && a.metadata.uid !== b.metadata.uid) return true;
  return x >= y;
}

function panel(title, id, parent) {
  const body = h('div', { class: 'panel-body' });
  parent.append(h('section', { class: 'panel', 'aria-labelledby': id },
    h('div', { class: 'panel-head' }, h('h2', { id, text: title })), body));
  return { body };
}

function facts(s, now, project, index) {
  const st = s.status || {};
  const hs = health(s);
  const fr = currentFreight(s);
  const lp = st.lastPromotion;
  const cp = st.currentPromotion;
  const gen = s.metadata.generation;
  const rows = [
    ['Phase', stageBadge(stagePhase(s))],
    ['Health', h('span', { class: 'chip ' + healthClass(hs), id: 'stage-health' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), hs || '— (not assessed)')],
    ['Freight', fr.length
      ? h('ul', { class: 'plain', id: 'stage-freight' }, fr.map((f) => h('li', null,
        h('span', { class: 'muted', text: f.origin ? `${f.origin.kind || 'Warehouse'} ${f.origin.name}: ` : '' }),
        index.alias(f.name) ? h('strong', { class: 'fr-alias', text: `${index.alias(f.name)} ` }) : null,
        h('span', { class: 'mono wrap', text: f.name }))))
      : h('span', { id: 'stage-freight', text: noFreight(st.freightSummary) ? 'No freight' : st.freightSummary })],
    cp ? ['Promoting', h('a', { class: 'mono wrap', href: pages.promotion(s.metadata.namespace || project, cp.name), text: cp.name })] : null,
    ['Last promotion', lp ? h('div', { id: 'stage-last-promotion' },
      h('a', { class: 'mono wrap', href: pages.promotion(s.metadata.namespace || project, lp.name), text: lp.name }),
      lp.status && lp.status.phase ? h('span', { class: 'tag', text: lp.status.phase }) : null,
      lp.finishedAt ? h('span', { class: 'muted' }, ' finished ', h('time', { datetime: lp.finishedAt, title: fullTime(lp.finishedAt), text: relTime(lp.finishedAt, now) })) : null,
      lp.status && lp.status.message ? h('p', { class: 'muted wrap small', text: lp.status.message }) : null)
      : h('span', { id: 'stage-last-promotion', text: 'No promotions' })],
    ['Shard', (s.spec && s.spec.shard) || '—'],
    // Kargo moves observedGeneration on only once the Stage is Ready.
    ['Generation', `${gen ?? '—'} · observed ${st.observedGeneration ?? '—'}`],
    ['Last refresh', st.lastHandledRefresh ? refreshValue(st.lastHandledRefresh) : h('span', { id: 'stage-last-refresh', text: 'none' })],
    ['Created', timeEl(s.metadata.creationTimestamp)],
  ].filter(Boolean);
  /** @type {HTMLElement[]} */
  const out = [h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', null, v)]))];
  const issues = (st.health && st.health.issues) || [];
  if (issues.length) {
    out.push(h('div', { class: 'callout sh-Unhealthy', role: 'note' },
      h('h3', { text: 'Health issues' }),
      h('ul', null, issues.map((i) => h('li', { class: 'wrap', text: i })))));
  }
  return out;
}

// A refresh token is a time in Kargo (RFC 3339); anything else is shown as is.
function refreshValue(v) {
  const t = ms(v);
  return Number.isFinite(t)
    ? h('time', { id: 'stage-last-refresh', datetime: v, title: v, text: fullTime(v), dataset: { value: v } })
    : h('span', { id: 'stage-last-refresh', class: 'mono wrap', text: v, dataset: { value: v } });
}

function conditions(cs) {
  if (!cs.length) return h('p', { class: 'empty', text: 'No conditions yet: the controller has not reconciled this stage.' });
  // Explicit roles: on narrow screens the rows are drawn as cards
  // (display: block), which would otherwise lose the table's semantics.
  return h('div', { class: 'table-wrap' }, h('table', { class: 'conditions', id: 'stage-conditions', role: 'table' },
    h('caption', { class: 'sr-only', text: 'Conditions of the stage' }),
    h('thead', { role: 'rowgroup' }, h('tr', { role: 'row' },
      h('th', { scope: 'col', role: 'columnheader', text: 'Type' }),
      h('th', { scope: 'col', role: 'columnheader', text: 'Status' }),
      h('th', { scope: 'col', role: 'columnheader', text: 'Reason' }),
      h('th', { scope: 'col', role: 'columnheader', text: 'Message' }),
      h('th', { scope: 'col', role: 'columnheader', class: 'col-since', text: 'Since' }))),
    h('tbody', { role: 'rowgroup' }, cs.map((c) => h('tr', { role: 'row', dataset: { condition: c.type, status: c.status } },
      h('th', { scope: 'row', role: 'rowheader', text: c.type }),
      h('td', { role: 'cell' }, h('span', { class: 'cond-status cond-' + String(c.status).toLowerCase(), text: c.status })),
      h('td', { role: 'cell', class: 'reason', text: c.reason || '—' }),
      h('td', { role: 'cell', class: 'wrap msg', text: c.message || '' }),
      h('td', { role: 'cell', class: 'col-since' }, timeEl(c.lastTransitionTime)))))));
}

function steps(s) {
  const out = [];
  const list = (s.spec && s.spec.promotionTemplate && s.spec.promotionTemplate.spec && s.spec.promotionTemplate.spec.steps) || [];
  if (isControlFlow(s)) {
    out.push(h('p', { class: 'muted pad', text: 'A control-flow stage: no promotion steps. Freight that reaches it is passed on to the stages downstream.' }));
  } else {
    out.push(h('ol', { class: 'steps', id: 'stage-steps' }, list.map((st, i) => h('li', null,
      h('span', { class: 'step-n', 'aria-hidden': 'true', text: String(i + 1) }),
      h('div', { class: 'step-body' },
        h('div', null,
          st.uses ? h('code', { class: 'uses', text: st.uses }) : null,
          st.task ? h('code', { class: 'uses', text: `task ${st.task.kind ? st.task.kind + '/' : ''}${st.task.name}` }) : null,
          h('span', { class: 'muted' }, ' as ', h('code', { text: st.as || `${st.task ? 'task' : 'step'}-${i + 1}` }))),
        st.if ? h('p', { class: 'muted small wrap' }, 'if ', h('code', { text: st.if })) : null)))));
  }
  if (isControlFlow(s)) return out; // no Freight of its own to verify
  const v = s.spec && s.spec.verification;
  const ats = (v && v.analysisTemplates) || [];
  out.push(h('p', { class: 'pad verification' }, h('strong', { text: 'Verification: ' }),
    ats.length ? ats.map((a) => a.name).join(', ') : h('span', { class: 'muted', text: 'none (Freight is verified once the stage is healthy)' })));
  return out;
}

function requests(project, s) {
  const rs = (s.spec && s.spec.requestedFreight) || [];
  if (!rs.length) return h('p', { class: 'empty', text: 'This stage requests no Freight.' });
  return h('ul', { class: 'requests', id: 'stage-requests' }, rs.map((r) => {
    const src = r.sources || {};
    const from = [];
    if (src.direct) from.push(h('span', { class: 'tag src', text: 'direct from the Warehouse' }));
    for (const u of src.stages || []) from.push(h('a', { class: 'mono', href: pages.stage(project, u), text: u }));
    const extra = [src.availabilityStrategy ? `available from ${src.availabilityStrategy === 'All' ? 'all' : 'one of the'} upstream stages` : '',
      src.requiredSoakTime ? `soak ${src.requiredSoakTime}` : ''].filter(Boolean).join(' · ');
    return h('li', null,
      h('div', null, h('span', { class: 'muted', text: `${(r.origin && r.origin.kind) || 'Warehouse'} ` }), h('strong', { class: 'mono', text: (r.origin && r.origin.name) || '?' })),
      h('div', { class: 'from' }, h('span', { class: 'muted', text: 'from ' }), from.length ? from.flatMap((x, i) => (i ? [', ', x] : [x])) : h('span', { class: 'muted', text: 'nowhere (no source)' })),
      extra ? h('div', { class: 'muted small', text: extra }) : null);
  }));
}
