// @ts-check
// Kargo's Promotions as the pages read them: a Promotion's phase, its
// run, its badges, and a Stage's Promotions as a list.
//
// A Promotion is a run of TaskActions: project = the Promotion's project,
// domain "kargo", run = the lowercased ULID of its name
// (<stage>.<ULID>.<freight7>); step i is the action step-<i+1>, or
// step-<i+1>-start-<n> once the Promotion has started over (stepAction).
import { h } from './dom.js';
import { pages } from './urls.js';
import { duration, ms, timeEl } from './format.js';
import { freightLabel } from './freight.js';

/** @typedef {import('./types.js').Promotion} Promotion */

/** The domain of every Promotion's run. */
export const DOMAIN = 'kargo';

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
export function abortRequested(pr) {
  return !!(pr && pr.metadata && pr.metadata.annotations && pr.metadata.annotations['kargo.akuity.io/abort']);
}

/** promoBadge is a Promotion phase: colour, dot and the phase in words. */
export function promoBadge(phase) {
  return h('span', { class: 'badge pp-' + phase }, h('span', { class: 'dot', 'aria-hidden': 'true' }), phase);
}

export function updatePromoBadge(el, phase) {
  const cls = 'badge pp-' + phase;
  if (el.className !== cls) el.className = cls;
  if (el.lastChild.textContent !== phase) el.lastChild.textContent = phase;
}

/** stepBadge is a step status in words ("Not run" for a step that never started). */
export function stepBadge(status) {
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

/** startOf is the start a Promotion's steps run in: 1, or more once it has
 * started over (its working directory was lost with the replica that ran
 * them; the server counts starts in an annotation).
 * @param {Promotion} pr */
export function startOf(pr) {
  const n = Number(((pr.metadata && pr.metadata.annotations) || {})['taskactions.io/promotion-start']);
  return Number.isInteger(n) && n > 1 ? n : 1;
}

/** stepAction is the name of step i's action in the Promotion's current
 * start: step-<i+1>, and step-<i+1>-start-<n> once it has started over.
 * @param {Promotion} pr @param {number} i */
export function stepAction(pr, i) {
  const start = startOf(pr);
  return start === 1 ? `step-${i + 1}` : `step-${i + 1}-start-${start}`;
}

/** startedAt is when a Promotion's first step started ("" before). */
export function startedAt(pr) {
  const md = (pr.status && pr.status.stepExecutionMetadata) || [];
  return (md[0] && md[0].startedAt) || '';
}

/** byNewest orders Promotions newest first (a name's ULID orders those of a Stage). */
export function byNewest(a, b) {
  const t = (ms(b.metadata.creationTimestamp) || 0) - (ms(a.metadata.creationTimestamp) || 0);
  if (t) return t;
  return a.metadata.name < b.metadata.name ? 1 : a.metadata.name > b.metadata.name ? -1 : 0;
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
        h('a', { class: 'pr-link mono', href: pages.promotion(project, name), text: name }),
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
