// Kargo's Promotions: the Promotion API, the Promote dialog of the Stage
// page, a Stage's Promotions as a list, and the Promotion page
// (/projects/{p}/promotions/{name}): its steps in order, live, with status,
// attempts, outputs and messages, and Abort.
//
// A Promotion is a run of TaskActions: project = the Promotion's project,
// domain "kargo", run = the lowercased ULID of its name
// (<stage>.<ULID>.<freight7>); step i is the action step-<i+1>. The page
// follows the Promotion on its Stage's Promotion stream and the attempts
// on the run's action stream.
import { h, setAttr, setText } from './dom.js';
import { ApiError, pages, request, streams } from './api.js';
import { LiveCollection, keepCurrent } from './live.js';
import { duration, fullTime, ms, phaseName, timeEl } from './format.js';
import { confirmAbort, toast } from './dialog.js';
import { relTime, stagePages } from './kargo.js';
import {
  approveFreight, artifactList, artifactText, freightLabel, getFreight, listFreight, originText, short,
} from './freight.js';

const enc = encodeURIComponent;
const BASE = '/api/v1';

/** The domain of every Promotion's run. */
export const DOMAIN = 'kargo';

/** Page URLs. */
export const promotionPages = {
  promotion: (p, n) => `/projects/${enc(p)}/promotions/${enc(n)}`,
};

/** Stream URLs. */
export const promotionStreams = {
  stage: (p, s) => `${BASE}/projects/${enc(p)}/stages/${enc(s)}/promotions/events`,
};

/** getPromotion reads one Promotion (ApiError 404 when there is none). */
export function getPromotion(p, n) {
  return request('GET', `/projects/${enc(p)}/promotions/${enc(n)}`);
}

/** promote creates a Promotion of Freight (by name) to a Stage. */
export function promote(p, s, freight) {
  return request('POST', `/projects/${enc(p)}/stages/${enc(s)}/promotions`, { freight });
}

/** abortPromotion asks for a Promotion to be aborted. */
export function abortPromotion(p, n) {
  return request('POST', `/projects/${enc(p)}/promotions/${enc(n)}/abort`, {});
}

const TERMINAL = new Set(['Succeeded', 'Failed', 'Errored', 'Aborted']);

/** promotionPhase is the Promotion's phase; one not picked up yet is Pending. */
export function promotionPhase(pr) {
  return (pr && pr.status && pr.status.phase) || 'Pending';
}

/** isTerminalPromotion: the phase never changes again. */
export function isTerminalPromotion(phase) {
  return TERMINAL.has(phase);
}

/** abortRequested: Kargo's abort annotation is on the Promotion. */
function abortRequested(pr) {
  return !!(pr && pr.metadata && pr.metadata.annotations && pr.metadata.annotations['kargo.akuity.io/abort']);
}

/** promoBadge is a Promotion phase: colour, dot and the phase in words. */
export function promoBadge(phase) {
  return h('span', { class: 'badge pp-' + phase }, h('span', { class: 'dot', 'aria-hidden': 'true' }), phase);
}

function updatePromoBadge(el, phase) {
  const cls = 'badge pp-' + phase;
  if (el.className !== cls) el.className = cls;
  if (el.lastChild.textContent !== phase) el.lastChild.textContent = phase;
}

/** stepBadge is a step status in words ("Not run" for a step that never started). */
function stepBadge(status) {
  return h('span', { class: 'badge ps-' + status.replace(/\s+/g, '') }, h('span', { class: 'dot', 'aria-hidden': 'true' }), status);
}

/** runOf is the run of a Promotion, as the server names it. */
export async function runOf(name) {
  const parts = name.split('.');
  if (parts.length >= 3 && parts[parts.length - 2].length === 26) return parts[parts.length - 2].toLowerCase();
  // Named otherwise (by kubectl): "p" and a hash of the name.
  if (!(crypto && crypto.subtle)) return '';
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(name)));
  return 'p' + [...sum].map((b) => b.toString(16).padStart(2, '0')).join('').slice(0, 25);
}

/** freightName is the name of the Freight a Promotion promotes. */
export function freightName(pr) {
  return (pr.spec && pr.spec.freight) || (pr.status && pr.status.freight && pr.status.freight.name) || '';
}

/** startedAt is when a Promotion's first step started ("" before). */
function startedAt(pr) {
  const md = (pr.status && pr.status.stepExecutionMetadata) || [];
  return (md[0] && md[0].startedAt) || '';
}

/** byNewest orders Promotions newest first (a name's ULID orders those of a Stage). */
export function byNewest(a, b) {
  const t = (ms(b.metadata.creationTimestamp) || 0) - (ms(a.metadata.creationTimestamp) || 0);
  if (t) return t;
  return a.metadata.name < b.metadata.name ? 1 : a.metadata.name > b.metadata.name ? -1 : 0;
}

/**
 * connStates combines the states of a page's streams for the header: the
 * page is live when all are.
 */
export function connStates(setConn) {
  const states = new Map();
  const order = ['reconnecting', 'connecting', 'syncing', 'live'];
  return (key) => (state) => {
    states.set(key, state);
    const all = [...states.values()];
    setConn(order.find((s) => all.includes(s)) || state);
  };
}

// The Stage page's list of Promotions.

const LIST_MAX = 50;

/** promotionList draws a Stage's Promotions, newest first. */
export function promotionList(project, items, index, current) {
  if (!items.length) {
    return h('p', { class: 'empty', id: 'stage-promotions-empty', text: 'No promotions yet. Promote Freight to this stage to start one.' });
  }
  const shown = items.slice(0, LIST_MAX);
  const ul = h('ul', { class: 'promotions', id: 'stage-promotions' }, shown.map((pr) => {
    const name = pr.metadata.name;
    const phase = promotionPhase(pr);
    const st = pr.status || {};
    const steps = (pr.spec && pr.spec.steps) || [];
    const md = st.stepExecutionMetadata || [];
    const fn = freightName(pr);
    const started = startedAt(pr);
    const last = md[md.length - 1];
    const running = !isTerminalPromotion(phase) && last && last.status === 'Running' ? last : null;
    const took = started && st.finishedAt ? duration(ms(st.finishedAt) - ms(started)) : '';
    return h('li', { dataset: { promotion: name, phase } },
      h('div', { class: 'pr-line' },
        promoBadge(phase),
        h('a', { class: 'pr-link mono', href: promotionPages.promotion(project, name), text: name }),
        name === current ? h('span', { class: 'tag src', text: 'current' }) : null),
      h('div', { class: 'pr-meta muted small' },
        h('span', null, 'Freight ', h('strong', { class: 'pr-freight', title: fn, text: freightLabel(fn, index.alias(fn)) })),
        running ? h('span', { text: `step ${md.length} of ${steps.length}: ${running.alias}` }) : null,
        started ? h('span', null, 'started ', timeEl(started)) : h('span', null, 'created ', timeEl(pr.metadata.creationTimestamp)),
        st.finishedAt ? h('span', null, 'finished ', timeEl(st.finishedAt), took ? ` (${took})` : '') : null),
      st.message && isTerminalPromotion(phase) && phase !== 'Succeeded' ? h('p', { class: 'pr-msg small wrap', text: st.message }) : null);
  }));
  if (items.length <= LIST_MAX) return ul;
  return [ul, h('p', { class: 'muted small pad', text: `The newest ${LIST_MAX} of ${items.length} promotions.` })];
}

// The Promote dialog: one <dialog>, made on first use.

let dlg = null;

function promoteDialog() {
  if (dlg) return dlg;
  const title = h('h2', { id: 'promote-title', text: 'Promote' });
  const desc = h('p', { id: 'promote-desc' });
  const body = h('div', { class: 'promote-body' });
  const status = h('p', { class: 'muted small', id: 'promote-status', role: 'status' });
  const error = h('p', { class: 'form-error', id: 'promote-error', role: 'alert', hidden: true });
  const cancel = h('button', { type: 'button', class: 'btn', id: 'promote-cancel', text: 'Cancel' });
  const confirm = h('button', { type: 'submit', class: 'btn primary', id: 'promote-confirm', text: 'Promote' });
  const form = h('form', { method: 'dialog' }, title, desc, body, status, error, h('div', { class: 'dialog-actions' }, cancel, confirm));
  const el = h('dialog', { id: 'promote-dialog', class: 'promote-dialog', 'aria-labelledby': 'promote-title', 'aria-describedby': 'promote-desc' }, form);
  document.body.append(el);
  dlg = { el, form, title, desc, body, status, error, cancel, confirm, current: null };
  cancel.addEventListener('click', () => el.close('cancel'));
  el.addEventListener('cancel', (ev) => { if (confirm.disabled) ev.preventDefault(); });
  el.addEventListener('close', () => {
    const c = dlg.current;
    dlg.current = null;
    if (c && c.returnFocus && c.returnFocus.isConnected) c.returnFocus.focus();
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault(); // open until the server said yes
    if (dlg.current) dlg.current.submit();
  });
  return dlg;
}

/**
 * openPromote asks which Freight to promote to a Stage, and promotes it.
 * Freight of the Stage's origins that is not available yet may be approved
 * for the Stage from here.
 * @param {object} o
 * @param {string} o.project
 * @param {object} o.stage the Stage object
 * @param {(pr: object) => void} [o.done] after the Promotion was created
 */
export function openPromote(o) {
  const d = promoteDialog();
  const stage = o.stage.metadata.name;
  const nSteps = ((o.stage.spec && o.stage.spec.promotionTemplate && o.stage.spec.promotionTemplate.spec && o.stage.spec.promotionTemplate.spec.steps) || []).length;
  const origins = ((o.stage.spec && o.stage.spec.requestedFreight) || []).map((r) => r.origin || {});
  let gen = 0;
  let busy = false;

  const setBusy = (on) => {
    busy = on;
    d.confirm.disabled = on;
    d.cancel.disabled = on;
    setAttr(d.confirm, 'aria-busy', String(on));
    for (const b of d.body.querySelectorAll('button, input')) b.disabled = on;
  };
  const fail = (e) => {
    d.error.textContent = e instanceof ApiError ? e.message : `Something went wrong: ${e.message}`;
    d.error.hidden = false;
  };
  const chosen = () => {
    const r = d.body.querySelector('input[name="freight"]:checked');
    return r ? r.value : '';
  };

  async function load(select) {
    const my = ++gen;
    d.body.replaceChildren(h('p', { class: 'empty', text: 'Loading the Freight…' }));
    let avail;
    let all;
    try {
      [avail, all] = await Promise.all([listFreight(o.project, stage), listFreight(o.project)]);
    } catch (e) {
      if (my !== gen) return;
      d.body.replaceChildren();
      fail(e);
      return;
    }
    if (my !== gen) return;
    const ok = new Set(avail.map((f) => f.metadata.name));
    const requested = (f) => origins.some((og) => f.origin && f.origin.name === og.name && (f.origin.kind || 'Warehouse') === (og.kind || 'Warehouse'));
    const other = all.filter((f) => !ok.has(f.metadata.name) && requested(f));
    const parts = [];
    if (avail.length) {
      parts.push(h('fieldset', { class: 'freight-choices' },
        h('legend', { text: `Available to ${stage} (${avail.length})` }),
        h('ul', { class: 'choices', id: 'promote-available' }, avail.map((f) => {
          const id = `pf-${f.metadata.name}`;
          return h('li', { dataset: { freight: f.metadata.name } },
            h('input', { type: 'radio', name: 'freight', id, value: f.metadata.name, checked: f.metadata.name === select }),
            h('label', { for: id }, freightItem(f)));
        }))));
    } else {
      parts.push(h('p', { class: 'callout sp-Steady', id: 'promote-none', text: `No Freight is available to ${stage}: it comes from the Warehouse directly, once verified in an upstream stage, or once approved for this stage.` }));
    }
    if (other.length) {
      parts.push(h('section', { class: 'freight-other', 'aria-labelledby': 'promote-other-title' },
        h('h3', { id: 'promote-other-title', text: `Not available to ${stage} (${other.length})` }),
        h('p', { class: 'muted small', text: 'Not verified upstream yet. Approving it for this stage makes it available here.' }),
        h('ul', { class: 'choices', id: 'promote-unavailable' }, other.slice(0, 20).map((f) => {
          const id = `pu-${f.metadata.name}`;
          return h('li', { dataset: { freight: f.metadata.name } },
            h('div', { class: 'choice-text', id }, freightItem(f)),
            h('button', {
              type: 'button', class: 'btn small', 'aria-describedby': id, text: 'Approve for this Stage',
              onclick: async () => {
                d.error.hidden = true;
                setBusy(true);
                try {
                  await approveFreight(o.project, f.metadata.name, stage);
                  d.status.textContent = `Approved ${freightLabel(f.metadata.name, f.alias)} for ${stage}: it can be promoted now.`;
                  setBusy(false);
                  await load(f.metadata.name);
                  d.body.querySelector('input[name="freight"]:checked')?.focus();
                } catch (e) {
                  setBusy(false);
                  fail(e);
                }
              },
            }));
        })),
        other.length > 20 ? h('p', { class: 'muted small', text: `And ${other.length - 20} older.` }) : null));
    }
    d.body.replaceChildren(...parts);
    setBusy(false);
    d.confirm.disabled = !avail.length;
    const first = d.body.querySelector('input[name="freight"]:checked') || d.body.querySelector('input[name="freight"]');
    if (first && !select) first.focus();
  }

  d.current = {
    returnFocus: document.activeElement,
    async submit() {
      if (busy) return;
      const name = chosen();
      if (!name) {
        fail(new ApiError(0, '', 'Choose the Freight to promote.'));
        return;
      }
      d.error.hidden = true;
      setBusy(true);
      try {
        const pr = await promote(o.project, stage, name);
        d.el.close('confirm');
        toast(`Promotion ${pr.metadata.name} created.`);
        if (o.done) o.done(pr);
      } catch (e) {
        fail(e);
      } finally {
        setBusy(false);
      }
    },
  };
  d.title.textContent = `Promote to ${stage}`;
  d.desc.textContent = `Choose the Freight to promote. The stage's ${nSteps} promotion step${nSteps === 1 ? '' : 's'} run with it, after any promotion of ${stage} before it.`;
  d.status.textContent = '';
  d.error.hidden = true;
  d.error.textContent = '';
  d.el.showModal();
  d.cancel.focus();
  load('');
}

/** freightItem is a piece of Freight in a few lines: alias, short name, age, artifacts. */
function freightItem(f, now = Date.now()) {
  const c = f.metadata.creationTimestamp;
  return h('span', { class: 'choice-body' },
    h('span', { class: 'choice-top' },
      h('strong', { class: 'fr-alias', text: f.alias || short(f.metadata.name) }),
      h('code', { class: 'muted', title: f.metadata.name, text: short(f.metadata.name) }),
      c ? h('time', { class: 'muted small', datetime: c, title: fullTime(c), text: relTime(c, now) }) : null),
    h('span', { class: 'muted small fr-art' }, originText(f.origin) ? `${originText(f.origin)} · ` : '', artifactText(f)));
}

// The Promotion page.

/** promotionPage: /projects/{p}/promotions/{name}. */
export function promotionPage(main, { project, name }, ui) {
  ui.setTitle(`${name} · Promotions · ${project}`);
  const crumbs = (stage) => ui.setCrumbs([
    { label: project },
    { label: 'Stages', href: stagePages.list(project) },
    ...(stage ? [{ label: stage, href: stagePages.stage(project, stage) }] : []),
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
      h('span', null, 'Stage ', h('a', { class: 'mono', href: stagePages.stage(project, stage), text: stage })),
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
    for (const el of main.querySelectorAll('.tick')) {
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
    notice.replaceChildren(h('p', { text: msg }), h('p', null, h('a', { href: stagePages.list(project), text: `The stages of ${project}` })));
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
  const actions = new LiveCollection({
    url: '', // set once the run is known
    event: 'action',
    key: (a) => a.actionId.name,
    deleted: (a) => a.deleted === true,
    apply: () => drawAll(),
    onState: conn('run'),
  });
  let promos = null;

  getPromotion(project, name).then(async (pr) => {
    const stage = (pr.spec && pr.spec.stage) || '';
    crumbs(stage);
    ui.setTitle(`${name} · ${stage} · ${project}`);
    show(pr);
    promos = new LiveCollection({
      url: promotionStreams.stage(project, stage),
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
    });
    promos.start();
    keepCurrent(promos, drawAll);
    getFreight(project, freightName(pr)).then((f) => { freight = f; drawAll(); }, () => {});
    run = await runOf(name);
    if (run) {
      runLink.href = pages.run(project, DOMAIN, run);
      runLink.hidden = false;
      actions.o.url = streams.run(project, DOMAIN, run);
      actions.start();
      keepCurrent(actions, drawAll);
    }
    drawAll();
  }, (e) => {
    if (e.status === 404) showGone(`There is no promotion ${name} in project ${project}.`);
    else showGone(`The promotion could not be read: ${e.message}`);
  });

  setInterval(tick, 1000);
}

