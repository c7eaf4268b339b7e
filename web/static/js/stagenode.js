// @ts-check
// A Stage's node in the pipeline graph, and a Warehouse's: made from a
// template, and written to only where what it shows changed.
import { h, setAttr, setText } from './dom.js';
import { fullTime } from './format.js';
import { pages } from './urls.js';
import {
  freightText, health, healthClass, healthText, isControlFlow, refreshPending, relTime,
  stageBadge, stageColor, stagePhase, updateStageBadge,
} from './kargo.js';

/** @typedef {import('./types.js').Stage} Stage */

/**
 * A Stage's node and what it shows now.
 * @typedef {object} StageNode
 * @property {string} name
 * @property {HTMLElement} el
 * @property {HTMLElement} from
 * @property {string} t its transform
 * @property {string | null} key its sources' key
 * @property {{direct: string[], up: string[], key: string} | null} src
 * @property {string | null} phase
 * @property {string | null} health
 * @property {boolean | null} cf control flow
 * @property {string | null} color
 * @property {HTMLElement} refreshing
 * @property {HTMLElement} badge
 * @property {HTMLElement} healthEl
 * @property {HTMLElement} freight
 * @property {HTMLElement} freightK
 * @property {HTMLElement} promo
 * @property {HTMLElement} promoK
 * @property {string} promoName
 * @property {string} promoAt
 */

// setHidden hides or shows an element if that changes anything (setting
// hidden to what it is would still be a mutation).
/** @param {HTMLElement} el @param {boolean} hidden */
function setHidden(el, hidden) {
  if (el.hidden !== hidden) el.hidden = hidden;
}

// A Stage node's template, cloned for each Stage: cheaper than building
// 600 nodes element by element.
const nodeTemplate = h('li', { class: 'snode' },
  h('div', { class: 'sn-top' },
    h('a', { class: 'sn-name mono' }),
    // Still, not spinning: hundreds of running animations would make every
    // frame repaint the graph (the Stage page has the spinner).
    h('span', { class: 'sn-refresh', hidden: true, role: 'img', 'aria-label': 'Refreshing', title: 'Refresh requested; the controller has not handled it yet', text: '↻' })),
  h('div', { class: 'sn-state' },
    stageBadge('Steady'),
    h('span', { class: 'sn-health chip sh-None' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), 'Health —')),
  h('div', { class: 'sn-line sn-freight' }, h('span', { class: 'k', text: 'Freight' }), ' ', h('span', { class: 'v' })),
  h('div', { class: 'sn-line sn-promo' }, h('span', { class: 'k', text: 'Last promotion' }), ' ', h('span', { class: 'v' })),
  h('span', { class: 'sr-only sn-from' }));

const whTemplate = h('li', { class: 'wnode' },
  h('span', { class: 'k', text: 'Warehouse' }),
  h('span', { class: 'wn-name mono' }));

/** @param {Node | null} el */
const $ = (el) => /** @type {HTMLElement} */ (el);

/** makeNode is a new Stage's node. @param {string} project @param {string} name @returns {StageNode} */
export function makeNode(project, name) {
  const el = $(nodeTemplate.cloneNode(true));
  const top = $(el.firstElementChild);
  const state = $(top.nextElementSibling);
  const fr = $(state.nextElementSibling);
  const pr = $(fr.nextElementSibling);
  const link = $(top.firstElementChild);
  link.textContent = name;
  link.setAttribute('href', pages.stage(project, name));
  el.setAttribute('data-stage', name);
  return {
    name, el, from: $(pr.nextElementSibling), t: '', key: null, src: null, phase: null, health: null, cf: null, color: null,
    refreshing: $(top.lastElementChild),
    badge: $(state.firstElementChild),
    healthEl: $(state.lastElementChild),
    freight: $(fr.lastElementChild),
    freightK: $(fr.firstElementChild),
    promo: $(pr.lastElementChild),
    promoK: $(pr.firstElementChild),
    promoName: '', promoAt: '',
  };
}

/** makeWarehouse is a Warehouse's node. @param {string} name */
export function makeWarehouse(name) {
  const el = $(whTemplate.cloneNode(true));
  $(el.lastElementChild).textContent = name;
  el.dataset.warehouse = name;
  return { el, t: '' };
}

/** fromText says where a Stage takes Freight from, for screen readers.
 * @param {{direct: string[], up: string[]}} src */
export function fromText(src) {
  const parts = [];
  if (src.direct.length) parts.push(`Warehouse ${src.direct.join(', ')}`);
  if (src.up.length) parts.push(`Stage${src.up.length > 1 ? 's' : ''} ${src.up.join(', ')}`);
  return parts.length ? `Freight from ${parts.join('; ')}.` : 'Requests no Freight.';
}

/**
 * fillNode writes the Stage into its node, touching only what changed;
 * count hears of a change of phase.
 * @param {StageNode} node @param {Stage} s @param {number} now
 * @param {(phase: string, d: number) => void} count
 */
export function fillNode(node, s, now, count) {
  const el = node.el;
  const phase = stagePhase(s);
  if (node.phase !== phase) {
    if (node.phase) count(node.phase, -1);
    count(phase, 1);
    node.phase = phase;
    el.dataset.phase = phase;
    updateStageBadge(node.badge, phase);
  }
  const hs = health(s);
  if (node.health !== hs) {
    node.health = hs;
    node.healthEl.className = 'sn-health chip ' + healthClass(hs);
    /** @type {ChildNode} */ (node.healthEl.lastChild).nodeValue = healthText(hs);
    setAttr(node.healthEl, 'title', hs ? `Health: ${hs}` : 'Health not assessed yet');
  }
  const cf = isControlFlow(s);
  if (node.cf !== cf) {
    node.cf = cf;
    el.classList.toggle('control-flow', cf);
  }
  const f = freightText(s);
  setText(node.freight, f || 'No freight');
  setAttr(node.freight, 'title', f || null);
  setHidden(node.freightK, !f);
  node.freight.classList.toggle('mono', !!f);
  const lp = s.status && s.status.lastPromotion;
  node.promoName = String((lp && lp.name) || '');
  node.promoAt = String((lp && lp.finishedAt) || '');
  promoText(node, now);
  setHidden(node.refreshing, !refreshPending(s));
  const color = stageColor(s);
  if (node.color !== color) {
    node.color = color;
    if (color) el.style.setProperty('--stage-color', color);
    else el.style.removeProperty('--stage-color');
  }
  setAttr(el, 'data-rv', (s.metadata && s.metadata.resourceVersion) || '');
}

/** promoText writes the node's last promotion ("5m ago" moves on).
 * @param {StageNode} node @param {number} now */
export function promoText(node, now) {
  setHidden(node.promoK, !node.promoName);
  if (!node.promoName) {
    setText(node.promo, 'No promotions');
    setAttr(node.promo, 'title', null);
    return;
  }
  const when = node.promoAt ? relTime(node.promoAt, now) : '';
  setText(node.promo, when ? `${node.promoName} · ${when}` : node.promoName);
  setAttr(node.promo, 'title', node.promoAt ? `${node.promoName}, finished ${fullTime(node.promoAt)}` : node.promoName);
}
