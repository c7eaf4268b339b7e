// @ts-check
// /projects/{p}/promotions/{name}: one Promotion, its steps in order,
// live, with status, attempts, outputs and messages, and Abort. The page
// follows the Promotion on its Stage's Promotion stream and the attempts
// on its run's action stream (promotions.js says which run).
import { h, setAttr, setText } from './dom.js';
import { abortPromotion, getFreight, getPromotion } from './api.js';
import { pages, streams } from './urls.js';
import { connStates, live } from './stream.js';
import { duration, ms, timeEl } from './format.js';
import { confirmAbort, toast } from './dialog.js';
import {
  DOMAIN, abortRequested, freightName, isTerminalPromotion, promoBadge, promotionPhase, runOf, startedAt, stepAction,
  updatePromoBadge,
} from './promotions.js';
import { facts, freightPanel, stepList } from './promotion-view.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * @param {HTMLElement} main @param {{project: string, name: string}} params
 * @param {UI} ui @param {Scope} scope
 */
export function promotionPage(main, { project, name }, ui, scope) {
  ui.setTitle(`${name} · Promotions · ${project}`);
  const crumbs = (stage) => ui.setCrumbs([
    { label: project },
    { label: 'Stages', href: pages.stages(project) },
    ...(stage ? [{ label: stage, href: pages.stage(project, stage) }] : []),
    { label: name }]);
  crumbs('');

  const badge = promoBadge('Pending');
  badge.id = 'promotion-phase';
  badge.hidden = true;
  const abortBtn = h('button', { type: 'button', class: 'btn danger', id: 'abort-promotion', hidden: true, text: 'Abort promotion' });
  const runLink = h('a', { class: 'btn', id: 'promotion-run', hidden: true, text: 'Run: action tree' });
  const meta = h('p', { class: 'meta', id: 'promotion-meta' });
  const notice = h('div', { class: 'callout notice-stage', role: 'alert', hidden: true });
  const message = h('div', { class: 'callout', id: 'promotion-message', role: 'status', hidden: true });
  const loading = h('p', { class: 'empty', text: 'Loading the promotion…' });
  const stepsBody = h('div', { class: 'panel-body' });
  const factsBody = h('div', { class: 'panel-body' });
  const freightBody = h('div', { class: 'panel-body' });
  // The steps first: at the top on a phone, on the left on a wide screen.
  const body = h('div', { class: 'stage-layout', id: 'promotion-detail', hidden: true },
    h('div', { class: 'stage-col main-col' },
      h('section', { class: 'panel', 'aria-labelledby': 'psteps-title' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'psteps-title', text: 'Steps' })), stepsBody)),
    h('div', { class: 'stage-col side-col' },
      h('section', { class: 'panel', 'aria-labelledby': 'pfacts-title' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'pfacts-title', text: 'Promotion' })), factsBody),
      h('section', { class: 'panel', 'aria-labelledby': 'pfreight-title' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'pfreight-title', text: 'Freight' })), freightBody)));
  main.append(
    h('div', { class: 'page-head' },
      h('div', { class: 'stage-title' },
        h('p', { class: 'eyebrow', text: `${project} · promotion` }),
        h('h1', null, h('span', { class: 'mono', id: 'promotion-name', text: name }), badge),
        meta),
      h('div', { class: 'head-actions' }, runLink, abortBtn)),
    notice, message, loading, body);

  let cur = null;
  let run = '';
  let freight = null; // the Freight object, once read
  let gone = false;
  const drawn = { steps: '', facts: '', freight: '' };

  function redraw(el, slot, key, build) {
    if (drawn[slot] === key) return;
    drawn[slot] = key;
    const focused = el.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null;
    el.replaceChildren(...[build()].flat().filter((x) => x != null && x !== false));
    if (focused) el.querySelector(`a[href="${CSS.escape(focused)}"]`)?.focus();
  }

  function show(pr) {
    cur = pr;
    gone = false;
    loading.hidden = true;
    notice.hidden = true;
    body.hidden = false;
    const phase = promotionPhase(pr);
    badge.hidden = false;
    updatePromoBadge(badge, phase);
    badge.dataset.phase = phase;
    const done = isTerminalPromotion(phase);
    const aborting = abortRequested(pr);
    abortBtn.hidden = done;
    abortBtn.disabled = aborting;
    setText(abortBtn, aborting ? 'Aborting…' : 'Abort promotion');
    setAttr(abortBtn, 'title', aborting ? 'Abort requested: the running step is being stopped' : null);
    const st = pr.status || {};
    const msg = st.message || (phase === 'Pending' ? `Pending: it starts when it is its turn, as ${(pr.spec && pr.spec.stage) || 'the stage'} runs one promotion at a time.` : '');
    message.hidden = !msg;
    message.className = `callout pp-${phase}`;
    setText(message, msg);
    drawAll();
  }

  function drawAll() {
    if (!cur) return;
    const pr = cur;
    const st = pr.status || {};
    const stage = (pr.spec && pr.spec.stage) || '';
    const steps = (pr.spec && pr.spec.steps) || [];
    const acts = [];
    for (let i = 0; i < steps.length; i++) {
      const a = actions.items.get(stepAction(pr, i));
      acts.push(a ? [a.phase, a.attempts, a.errorState && a.errorState.message] : null);
    }
    redraw(meta, 'meta', JSON.stringify([stage, pr.metadata.creationTimestamp, st.finishedAt, startedAt(pr)]), () => [
      h('span', null, 'Stage ', h('a', { class: 'mono', href: pages.stage(project, stage), text: stage })),
      h('span', null, 'Created ', timeEl(pr.metadata.creationTimestamp)),
      st.finishedAt ? h('span', null, 'Finished ', timeEl(st.finishedAt)) : null]);
    redraw(stepsBody, 'steps', JSON.stringify([steps, st.stepExecutionMetadata, st.state, promotionPhase(pr), acts, run]), () => stepList(pr, project, run, actions.items));
    redraw(factsBody, 'facts', JSON.stringify([promotionPhase(pr), st.currentStep, st.finishedAt, startedAt(pr), run, pr.metadata.annotations, steps.length, (st.stepExecutionMetadata || []).length]), () => facts(pr, project, run));
    redraw(freightBody, 'freight', JSON.stringify([freightName(pr), freight && freight.metadata.resourceVersion, st.freight]), () => freightPanel(pr, freight));
    tick();
  }

  function tick() {
    const now = Date.now();
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (main.querySelectorAll('.tick'))) {
      const s = ms(el.dataset.start);
      if (!Number.isFinite(s)) continue;
      const e = ms(el.dataset.end);
      setText(el, duration((Number.isFinite(e) ? e : now) - s));
    }
  }

  function showGone(msg) {
    gone = true;
    cur = null;
    loading.hidden = true;
    body.hidden = true;
    badge.hidden = true;
    abortBtn.hidden = true;
    message.hidden = true;
    notice.className = 'callout sp-Failed notice-stage';
    notice.replaceChildren(h('p', { text: msg }), h('p', null, h('a', { href: pages.stages(project), text: `The stages of ${project}` })));
    notice.hidden = false;
  }

  abortBtn.addEventListener('click', () => {
    if (!cur) return;
    confirmAbort({
      heading: `Abort promotion ${name}?`,
      text: 'The running step is stopped and ends Aborted, and so does the Promotion; the steps after it do not run. The Freight does not reach the stage. This cannot be undone.',
      confirm: 'Abort promotion',
      noReason: true,
      run: () => abortPromotion(project, name),
      done: () => toast(`Abort requested for promotion ${name}.`),
    });
  });

  const conn = connStates(ui.setConn);
  const actions = live(scope, {
    url: '', // set once the run is known
    event: 'action',
    key: (a) => a.actionId.name,
    // No `deleted`: an aborted step's action is deleted, and stays shown
    // ABORTED, as history keeps it (see run.js).
    apply: () => drawAll(),
    onState: conn('run'),
  }, () => drawAll());
  /** @type {import('./stream.js').LiveCollection<'promotion'> | null} */
  let promos = null;

  getPromotion(project, name).then(async (pr) => {
    const stage = (pr.spec && pr.spec.stage) || '';
    crumbs(stage);
    ui.setTitle(`${name} · ${stage} · ${project}`);
    show(pr);
    if (scope.closed) return; // the page went while the Promotion was read
    promos = live(scope, {
      url: streams.stagePromotions(project, stage),
      event: 'promotion',
      key: (x) => x.metadata.name,
      deleted: (x) => x.deleted === true,
      apply: (changes) => {
        if (!changes.has(name)) return;
        const x = changes.get(name);
        if (x === null) showGone(`Promotion ${name} was deleted.`);
        else show(x);
      },
      onSynced: () => {
        if (!promos.items.has(name) && !gone) showGone(`Promotion ${name} was deleted.`);
      },
      onState: conn('promotion'),
    }, drawAll);
    promos.start();
    getFreight(project, freightName(pr)).then((f) => { freight = f; drawAll(); }, () => {});
    run = await runOf(name);
    if (run) {
      runLink.href = pages.run(project, DOMAIN, run);
      runLink.hidden = false;
      actions.o.url = streams.run(project, DOMAIN, run);
      actions.start();
    }
    drawAll();
  }, (e) => {
    if (e.status === 404) showGone(`There is no promotion ${name} in project ${project}.`);
    else showGone(`The promotion could not be read: ${e.message}`);
  });

  scope.interval(tick, 1000);
}
