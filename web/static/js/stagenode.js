// @ts-check
// A Stage's node in the pipeline graph, and a Warehouse's: made from a
// template, and written to only where what it shows changed.
import { h, setAttr, setText } from './dom.js';
import { fullTime } from './format.js';
import { pages } from './urls.js';
import { short } from './freight.js';
import {
  discoveredAt, freightText, health, healthClass, healthText, isControlFlow, refreshPending, relTime,
  stageBadge, stageColor, stagePhase, subscriptions, updateStageBadge, warehouseProblem, warehouseState,
} from './kargo.js';
import { currentVerification, phaseOf, verificationClass, verificationLabel, verificationTitle } from './verification.js';

/** @typedef {import('./types.js').Stage} Stage */
/** @typedef {import('./types.js').Warehouse} Warehouse */

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
 * @property {HTMLElement} verif the current verification's badge
 * @property {HTMLElement} verifMsg what it says, for screen readers
 * @property {string | null} vkey what the badge shows
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
    // The current Freight's verification: its phase in a few words, what
    // it says (a failure's message) as the title and read out.
    h('span', { class: 'sn-verif chip', hidden: true }, h('span', { class: 'dot', 'aria-hidden': 'true' }), ''),
    h('span', { class: 'sr-only sn-verif-msg' }),
    // Still, not spinning: hundreds of running animations would make every
    // frame repaint the graph (the Stage page has the spinner).
    h('span', { class: 'sn-refresh', hidden: true, role: 'img', 'aria-label': 'Refreshing', title: 'Refresh requested; the controller has not handled it yet', text: '↻' })),
  h('div', { class: 'sn-state' },
    stageBadge('Steady'),
    h('span', { class: 'sn-health chip sh-None' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), 'Health —')),
  h('div', { class: 'sn-line sn-freight' }, h('span', { class: 'k', text: 'Freight' }), ' ', h('span', { class: 'v' })),
  h('div', { class: 'sn-line sn-promo' }, h('span', { class: 'k', text: 'Last promotion' }), ' ', h('span', { class: 'v' })),
  h('span', { class: 'sr-only sn-from' }));

// A Warehouse's node: its name and Refresh; its state (as Kargo's UI
// reads the conditions) and subscriptions; its newest Freight; its last
// discovery. What a failure says is the state's title, and read out.
const whIcon = h('span', { class: 'wn-icon', 'aria-hidden': 'true' });
whIcon.innerHTML = '<svg viewBox="0 0 16 16" width="14" height="14" focusable="false"><path fill="currentColor" d="M8 1.2 15 5v9.8h-2.2V7H3.2v7.8H1V5zM4.4 8.2h7.2v1.6H4.4zm0 2.6h7.2v1.6H4.4zm0 2.6h7.2v1.4H4.4z"/></svg>';
const whTemplate = h('li', { class: 'wnode' },
  h('div', { class: 'wn-top' },
    whIcon,
    h('span', { class: 'sr-only', text: 'Warehouse ' }),
    h('span', { class: 'wn-name mono' }),
    h('button', { type: 'button', class: 'wn-refresh', hidden: true, 'aria-busy': 'false', text: '↻' })),
  h('div', { class: 'wn-state' },
    h('span', { class: 'badge', hidden: true }, h('span', { class: 'dot', 'aria-hidden': 'true' }), ''),
    h('span', { class: 'sr-only wn-problem' }),
    h('span', { class: 'wn-subs' })),
  h('div', { class: 'sn-line wn-freight' }, h('span', { class: 'k', text: 'Freight' }), ' ', h('span', { class: 'v' })),
  h('div', { class: 'sn-line wn-disc' }, h('span', { class: 'k', text: 'Discovered' }), ' ', h('time', { class: 'v' })));

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
    verif: $(top.children[1]),
    verifMsg: $(top.children[2]),
    vkey: null,
    badge: $(state.firstElementChild),
    healthEl: $(state.lastElementChild),
    freight: $(fr.lastElementChild),
    freightK: $(fr.firstElementChild),
    promo: $(pr.lastElementChild),
    promoK: $(pr.firstElementChild),
    promoName: '', promoAt: '',
  };
}

/**
 * A Warehouse's node and what it shows now.
 * @typedef {object} WarehouseNode
 * @property {string} name
 * @property {HTMLElement} el
 * @property {string} t its transform
 * @property {string | null} state
 * @property {HTMLButtonElement} refresh
 * @property {HTMLElement} badge
 * @property {HTMLElement} problem
 * @property {HTMLElement} subs
 * @property {HTMLElement} freight
 * @property {HTMLElement} freightK
 * @property {HTMLElement} discLine
 * @property {HTMLElement} disc
 * @property {string} discAt
 */

/** makeWarehouse is a Warehouse's node. @param {string} name @returns {WarehouseNode} */
export function makeWarehouse(name) {
  const el = $(whTemplate.cloneNode(true));
  const top = $(el.firstElementChild);
  const state = $(top.nextElementSibling);
  const fr = $(state.nextElementSibling);
  const disc = $(fr.nextElementSibling);
  const nameEl = $(top.children[2]);
  nameEl.textContent = name;
  nameEl.title = `Warehouse ${name}`;
  const refresh = /** @type {HTMLButtonElement} */ (top.lastElementChild);
  refresh.setAttribute('aria-label', `Refresh warehouse ${name}`);
  el.dataset.warehouse = name;
  return {
    name, el, t: '', state: null, refresh,
    badge: $(state.children[0]),
    problem: $(state.children[1]),
    subs: $(state.children[2]),
    freight: $(fr.lastElementChild),
    freightK: $(fr.firstElementChild),
    discLine: disc,
    disc: $(disc.lastElementChild),
    discAt: '',
  };
}

/**
 * fillWarehouse writes a Warehouse into its node, touching only what
 * changed. w is undefined when the project has no such Warehouse (a
 * Stage names it), or before the Warehouses are known (!synced).
 * @param {WarehouseNode} node
 * @param {Warehouse | undefined} w
 * @param {{project: string, synced: boolean, busy: boolean, now: number}} o
 *   busy: a refresh asked for is not handled yet
 */
export function fillWarehouse(node, w, o) {
  const state = w ? warehouseState(w) : o.synced ? 'Missing' : '';
  if (node.state !== state) {
    node.state = state;
    setAttr(node.el, 'data-state', state || null);
    node.badge.className = 'badge ws-' + (state || 'None');
    /** @type {ChildNode} */ (node.badge.lastChild).nodeValue = state;
  }
  setHidden(node.badge, !state);
  let problem = '';
  if (state === 'Missing') problem = `There is no Warehouse ${node.name} in project ${o.project}; Stages request Freight from it.`;
  else if (w && state === 'Failed') problem = warehouseProblem(w);
  // The problem is the state's tooltip, the node's where nothing in it
  // has one of its own, and read out after the state.
  setAttr(node.badge, 'title', problem || null);
  setAttr(node.el, 'title', problem ? `${state}: ${problem}` : null);
  setText(node.problem, problem ? `: ${problem}` : '');

  const subs = w ? subscriptions(w) : [];
  setHidden(node.subs, !w);
  setText(node.subs, `${subs.length} subscription${subs.length === 1 ? '' : 's'}`);
  setAttr(node.subs, 'title', subs.length ? subs.map(([kind, repo]) => `${kind} ${repo}`).join('\n') : null);

  const id = (w && w.status && w.status.lastFreightID) || '';
  setAttr(node.el, 'data-freight', id || null);
  setHidden(node.freightK, !id);
  setText(node.freight, id ? short(id) : w ? 'No Freight yet' : state === 'Missing' ? 'Not in this project' : '…');
  setAttr(node.freight, 'title', id ? `Newest Freight: ${id}` : null);
  node.freight.classList.toggle('mono', !!id);

  node.discAt = w ? discoveredAt(w) : '';
  setHidden(node.discLine, !w);
  discText(node, o.now);

  setHidden(node.refresh, !w);
  const busy = !!w && o.busy;
  setAttr(node.refresh, 'aria-busy', String(busy));
  setAttr(node.refresh, 'aria-disabled', busy ? 'true' : null);
  setAttr(node.refresh, 'title', busy ? 'Refreshing: waiting for the controller to discover' : 'Refresh: discover now');
  setAttr(node.el, 'data-rv', (w && w.metadata && w.metadata.resourceVersion) || null);
}

/** discText writes the node's last discovery ("2m ago" moves on).
 * @param {WarehouseNode} node @param {number} now */
export function discText(node, now) {
  setHidden(/** @type {HTMLElement} */ (node.discLine.firstElementChild), !node.discAt);
  setText(node.disc, node.discAt ? relTime(node.discAt, now) : 'Not discovered yet');
  setAttr(node.disc, 'datetime', node.discAt || null);
  setAttr(node.disc, 'title', node.discAt ? `Last discovery: ${fullTime(node.discAt)}` : null);
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
  verifText(node, cf ? null : currentVerification(s));
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

/** verifText writes the current verification into the node (none: no
 * badge). @param {StageNode} node @param {import('./verification.js').VerificationInfo | null} v */
function verifText(node, v) {
  const phase = v ? phaseOf(v) : '';
  const title = v ? verificationTitle(v) : '';
  const key = phase + '\n' + title;
  if (node.vkey === key) return;
  node.vkey = key;
  setAttr(node.el, 'data-verification', phase || null);
  setHidden(node.verif, !v);
  node.verif.className = 'sn-verif chip ' + verificationClass(phase);
  /** @type {ChildNode} */ (node.verif.lastChild).nodeValue = phase ? verificationLabel(phase) : '';
  setAttr(node.verif, 'title', title || null);
  setText(node.verifMsg, title ? `: ${title}` : '');
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
