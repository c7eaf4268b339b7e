// @ts-check
// /projects/{p}/promotions/{name}: one Promotion, its steps in order,
// live, with status, attempts, outputs and messages, and Abort. The page
// follows the Promotion on its Stage's Promotion stream and the attempts
// on its run's action stream (promotions.js says which run).
import { h, setAttr, setText } from './dom.js';
import { abortPromotion, getFreight, getPromotion } from './api.js';
import { pages, streams } from './urls.js';
import { connStates, live } from './stream.js';
import { duration, fullTime, ms, phaseName, timeEl } from './format.js';
import { confirmAbort, toast } from './dialog.js';
import { artifactList, freightLabel, originText, short } from './freight.js';
import {
  DOMAIN, abortRequested, freightName, isTerminalPromotion, promoBadge, promotionPhase, runOf, startedAt,
  stepBadge, updatePromoBadge,
} from './promotions.js';

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
      const a = actions.items.get(`step-${i + 1}`);
      acts.push(a ? [a.phase, a.attempts, a.errorState && a.errorState.message] : null);
    }
    redraw(meta, 'meta', JSON.stringify([stage, pr.metadata.creationTimestamp, st.finishedAt, startedAt(pr)]), () => [
      h('span', null, 'Stage ', h('a', { class: 'mono', href: pages.stage(project, stage), text: stage })),
      h('span', null, 'Created ', timeEl(pr.metadata.creationTimestamp)),
      st.finishedAt ? h('span', null, 'Finished ', timeEl(st.finishedAt)) : null]);
    redraw(stepsBody, 'steps', JSON.stringify([steps, st.stepExecutionMetadata, st.state, promotionPhase(pr), acts, run]), () => stepList(pr));
    redraw(factsBody, 'facts', JSON.stringify([promotionPhase(pr), st.currentStep, st.finishedAt, startedAt(pr), run, pr.metadata.annotations, steps.length, (st.stepExecutionMetadata || []).length]), () => facts(pr));
    redraw(freightBody, 'freight', JSON.stringify([freightName(pr), freight && freight.metadata.resourceVersion, st.freight]), () => freightPanel(pr));
    tick();
  }

  function facts(pr) {
    const st = pr.status || {};
    const steps = (pr.spec && pr.spec.steps) || [];
    const md = st.stepExecutionMetadata || [];
    const started = startedAt(pr);
    const actor = (pr.metadata.annotations || {})['kargo.akuity.io/create-actor'];
    const rows = [
      ['Phase', promoBadge(promotionPhase(pr))],
      ['Progress', `${md.filter((m) => m.finishedAt).length} of ${steps.length} steps done`],
      ['Created', timeEl(pr.metadata.creationTimestamp)],
      ['Started', started ? timeEl(started) : 'not yet'],
      ['Finished', st.finishedAt ? timeEl(st.finishedAt) : '—'],
      ['Duration', h('span', { class: 'tick', id: 'promotion-duration', dataset: { start: started, end: st.finishedAt || '' }, text: '—' })],
      actor ? ['Created by', h('span', { class: 'wrap', text: actor })] : null,
      ['Run', run ? h('a', { class: 'mono', href: pages.run(project, DOMAIN, run), text: run }) : '—'],
    ].filter(Boolean);
    return h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', null, v)]));
  }

  function freightPanel(pr) {
    const fn = freightName(pr);
    const ref = freight || (pr.status && pr.status.freight) || null;
    if (!fn) return h('p', { class: 'empty', text: 'No Freight named.' });
    return h('div', { id: 'promotion-freight', dataset: { freight: fn } },
      h('div', { class: 'fc-line' },
        h('strong', { text: freightLabel(fn, freight && freight.alias) }),
        h('code', { class: 'muted', title: fn, text: short(fn) }),
        ref && ref.origin ? h('span', { class: 'muted small', text: `from ${originText(ref.origin)}` }) : null),
      ref ? artifactList(ref) : null,
      h('p', { class: 'mono small muted wrap', text: fn }));
  }

  function stepList(pr) {
    const st = pr.status || {};
    const steps = (pr.spec && pr.spec.steps) || [];
    const md = st.stepExecutionMetadata || [];
    const state = st.state || {};
    const phase = promotionPhase(pr);
    if (!steps.length) return h('p', { class: 'empty', text: 'This promotion has no steps.' });
    return h('ol', { class: 'psteps', id: 'promotion-steps' }, steps.map((s, i) => {
      const alias = s.as || `step-${i + 1}`;
      const m = md[i];
      const status = m && m.status ? m.status : isTerminalPromotion(phase) ? 'Not run' : 'Pending';
      const a = actions.items.get(`step-${i + 1}`);
      const out = state[alias];
      const hasOut = out !== undefined && out !== null && !(typeof out === 'object' && Object.keys(out).length === 0);
      const attempts = a ? a.attempts : null;
      const bad = ['Failed', 'Errored', 'Aborted'].includes(status);
      return h('li', { class: 'pstep ps-' + status.replace(/\s+/g, ''), dataset: { step: alias, status, index: String(i) } },
        h('span', { class: 'step-n', 'aria-hidden': 'true', text: String(i + 1) }),
        h('div', { class: 'pstep-body' },
          h('div', { class: 'pstep-head' },
            h('h3', { class: 'pstep-alias mono', text: alias }),
            stepBadge(status),
            s.uses ? h('code', { class: 'uses', text: s.uses }) : null,
            s.continueOnError ? h('span', { class: 'tag src', text: 'continues on error' }) : null),
          s.if ? h('p', { class: 'muted small wrap' }, 'if ', h('code', { text: s.if })) : null,
          m && m.startedAt ? h('p', { class: 'pstep-meta muted small' },
            h('span', null, 'started ', timeEl(m.startedAt)),
            m.finishedAt ? h('span', null, 'finished ', timeEl(m.finishedAt)) : null,
            h('span', { class: 'tick', dataset: { start: m.startedAt, end: m.finishedAt || '' } }),
            attempts != null ? h('span', { class: 'pstep-attempts', text: `attempt${attempts === 1 ? '' : 's'} ${attempts}` }) : null,
            m.errorCount ? h('span', { text: `${m.errorCount} error${m.errorCount === 1 ? '' : 's'}` }) : null,
            a && run ? h('a', { href: `${pages.run(project, DOMAIN, run)}#action=step-${i + 1}`, 'aria-label': `Action of step ${alias}`, text: `action step-${i + 1}` }) : null)
            : null,
          a && !isTerminalPromotion(phase) && status === 'Running' && a.phase ? h('p', { class: 'muted small', text: `action ${phaseName(a.phase).toLowerCase()}` }) : null,
          m && m.message ? h('p', { class: `pstep-msg small wrap${bad ? ' bad' : ''}`, text: m.message }) : null,
          // Between attempts of a step that retries: what the last one met.
          status === 'Running' && a && a.errorState && a.errorState.message
            ? h('p', { class: 'pstep-msg small wrap bad', text: `attempt ${a.attempts}: ${a.errorState.message}` }) : null,
          hasOut ? h('div', { class: 'pstep-out' },
            h('span', { class: 'art-kind', text: 'outputs' }),
            h('pre', { class: 'outputs' }, h('code', { text: JSON.stringify(out) }))) : null));
    }));
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
    deleted: (a) => a.deleted === true,
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
