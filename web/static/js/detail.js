// @ts-check
// The run page's detail panel: the selected action's facts, abort reason,
// error, phase history and conditions, and its logs.
import { h, setText } from './dom.js';
import { actionSpan, badge, cacheName, duration, isTerminal, ms, phaseName, spanDuration, timeEl } from './format.js';
import { LogView } from './logs.js';

/** @typedef {import('./types.js').ActionEvent} ActionEvent */

/**
 * DetailPanel shows one action: a Details tab (facts, abort reason, error,
 * timeline, conditions) and a Logs tab (its attempts' output, live).
 */
export class DetailPanel {
  /**
   * @param {HTMLElement} el
   * @param {{abort: (name: string) => void, select: (name: string) => void, ids: {project: string, domain: string, run: string}}} o
   */
  constructor(el, { abort, select, ids }) {
    this.el = el;
    this.abort = abort;
    this.selectAction = select;
    this.ids = ids;
    this.a = null;
    this.durEl = null;
    this.tab = 'details';
    this.logs = null; // the LogView of the action shown, once its tab opened
    this.headBox = h('div');
    this.bodyBox = h('div', { id: 'detail-body', role: 'tabpanel' });
    this.show(null);
  }

  /** close ends the logs' stream (the page goes). */
  close() {
    if (this.logs) this.logs.close();
    this.logs = null;
  }

  /** @param {string} tab */
  setTab(tab) {
    this.tab = tab;
    this.show(this.a);
    const t = document.getElementById(`tab-${tab}`);
    if (t) t.focus();
  }

  // logView is the Logs tab's content: kept while the same action is
  // shown, so that a status change does not restart the log.
  logView(a) {
    if (this.logs && this.logs.id.action !== a.actionId.name) {
      this.logs.close();
      this.logs = null;
    }
    if (!this.logs) this.logs = new LogView({ ...this.ids, action: a.actionId.name });
    this.logs.setAttempts(a.attempts);
    return this.logs.el;
  }

  show(a, removedName) {
    // Keep the keyboard where it was when the panel is redrawn.
    const focusId = this.el.contains(document.activeElement) ? document.activeElement.id : '';
    this.a = a;
    this.durEl = null;
    if (!a) {
      if (this.logs) this.logs.close();
      this.logs = null;
      this.el.replaceChildren(
        h('h2', { id: 'detail-title', class: 'sr-only', text: 'Action details' }),
        h('div', { class: 'placeholder' },
          h('p', { text: removedName ? `Action ${removedName} was deleted.` : 'Select an action to see its phase history, errors and conditions.' }),
          h('p', { class: 'muted', text: 'Rows take the keyboard too: arrows move, Enter selects, ←/→ collapse and expand.' })));
      return;
    }
    const name = a.actionId.name;
    const done = isTerminal(a.phase);
    this.durEl = h('dd', { text: spanDuration(actionSpan(a)) });
    const facts = [
      ['Task type', a.actionType === 'condition' ? 'condition' : (a.taskType || '–')],
      a.taskTemplate ? ['Task template', `${a.taskTemplate.size} bytes, ${a.taskTemplate.encoding === 'json' ? 'JSON' : 'binary (opaque here)'}`] : null,
      ['Parent', a.parentActionName ? h('button', { type: 'button', class: 'linklike mono', text: a.parentActionName, onclick: () => this.selectAction(a.parentActionName) }) : '– (root)'],
      ['Attempts', String(a.attempts ?? 0)],
      ['System failures', String(a.systemFailures ?? 0)],
      ['Cache', cacheName(a.cacheStatus)],
      ['Created', timeEl(a.createdAt)],
      ['Updated', timeEl(a.updatedAt)],
      ['Duration', this.durEl],
      // Only while it can change: a finished action's last plugin phase
      // ("sleeping until …") would contradict its phase.
      a.pluginPhase && !done ? ['Plugin phase', a.pluginPhase] : null,
      a.shortName ? ['Short name', a.shortName] : null,
      a.group ? ['Group', a.group] : null,
      a.outputUri ? ['Output', h('span', { class: 'mono wrap', text: a.outputUri })] : null,
      a.traceId ? ['Trace', traceEl(a.traceId)] : null,
    ].filter(Boolean);
    const dl = h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), v instanceof HTMLElement && v.tagName === 'DD' ? v : h('dd', null, v)]));

    const sections = [];
    if (a.phase === 'ABORTED' || a.abortReason) {
      sections.push(h('div', { class: 'callout ph-ABORTED', role: 'note' },
        h('h3', { text: 'Abort reason' }),
        h('p', { class: a.abortReason ? 'wrap' : 'muted', text: a.abortReason || 'No reason given.' })));
    }
    // Nothing here runs its task type: say so while it waits.
    if (a.pendingReason) {
      sections.push(h('div', { class: 'callout', role: 'note' },
        h('h3', { text: 'Waiting for an executor' }),
        h('p', { class: 'wrap', text: a.pendingReason })));
    }
    // An abort is said once, by its reason above, not again as an error.
    if (a.phase !== 'ABORTED' && a.errorState && (a.errorState.code || a.errorState.message)) {
      const e = a.errorState;
      sections.push(h('div', { class: 'callout ph-FAILED', role: 'note' },
        h('h3', null, 'Error', e.kind ? h('span', { class: 'tag', text: e.kind.toLowerCase() }) : null),
        e.code ? h('p', { class: 'mono', text: e.code }) : null,
        e.message ? h('pre', { class: 'wrap', text: e.message }) : null));
    }
    sections.push(h('section', { 'aria-labelledby': 'timeline-title' },
      h('h3', { id: 'timeline-title', text: 'Phase history' }),
      timeline(a.phaseHistory || [])));
    if (a.conditions && a.conditions.length) {
      sections.push(h('section', { 'aria-labelledby': 'conditions-title' },
        h('h3', { id: 'conditions-title', text: 'Conditions' }),
        h('ul', { class: 'conds' }, a.conditions.map((c) => h('li', null,
          h('div', { class: 'cond-line' },
            h('strong', { text: c.type }),
            h('span', { class: 'cond-status cond-' + String(c.status).toLowerCase(), text: c.status }),
            c.reason ? h('span', { text: c.reason }) : null,
            timeEl(c.lastTransitionTime)),
          c.message ? h('p', { class: 'tl-msg wrap', text: c.message }) : null)))));
    }

    const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Action views' },
      ['details', 'logs'].map((t) => h('button', {
        type: 'button', role: 'tab', id: `tab-${t}`, class: 'tab', 'aria-selected': String(this.tab === t),
        'aria-controls': 'detail-body', tabindex: this.tab === t ? '0' : '-1',
        text: t === 'details' ? 'Details' : 'Logs', onclick: () => this.setTab(t),
      })));
    tabs.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') this.setTab(this.tab === 'details' ? 'logs' : 'details');
    });
    this.headBox.replaceChildren(
      h('div', { class: 'detail-head' },
        h('div', null,
          h('p', { class: 'eyebrow', text: 'Action' }),
          h('h2', { id: 'detail-title', class: 'mono', text: name })),
        badge(a.phase)),
      h('div', { class: 'detail-actions' },
        h('button', {
          type: 'button', class: 'btn danger', id: 'abort-action', disabled: done,
          title: done ? `Already ${phaseName(a.phase).toLowerCase()}` : null,
          text: 'Abort action', onclick: () => this.abort(name),
        })),
      tabs);
    if (this.tab === 'logs') {
      const view = this.logView(a);
      if (this.bodyBox.firstChild !== view) this.bodyBox.replaceChildren(view);
    } else {
      if (this.logs) this.logs.close();
      this.logs = null;
      this.bodyBox.replaceChildren(dl, ...sections);
    }
    this.bodyBox.setAttribute('aria-labelledby', `tab-${this.tab}`);
    if (this.el.firstChild !== this.headBox) this.el.replaceChildren(this.headBox, this.bodyBox);
    if (focusId) {
      const el = document.getElementById(focusId);
      if (el && !(/** @type {HTMLButtonElement} */ (el)).disabled) el.focus();
    }
  }

  tick() {
    if (this.a && this.durEl && !isTerminal(this.a.phase)) setText(this.durEl, spanDuration(actionSpan(this.a)));
  }
}

/**
 * traceEl is a run's trace id, a link to the tracing UI when the server
 * names one (--trace-link-template, as a meta element).
 * @param {string} id
 */
function traceEl(id) {
  const meta = document.querySelector('meta[name="taskactions-trace-link"]');
  const tmpl = meta && meta.getAttribute('content');
  if (!tmpl || !/^https?:\/\//.test(tmpl)) return h('span', { class: 'mono', text: id });
  return h('a', { class: 'mono', href: tmpl.replaceAll('{traceId}', encodeURIComponent(id)), target: '_blank', rel: 'noopener noreferrer', text: id });
}

function timeline(history) {
  if (!history.length) return h('p', { class: 'muted', text: 'No transitions yet.' });
  const ol = h('ol', { class: 'timeline' });
  let prev = NaN;
  for (const t of history) {
    const at = ms(t.occurredAt);
    const delta = Number.isFinite(prev) && Number.isFinite(at) ? `+${duration(at - prev)}` : '';
    prev = at;
    ol.append(h('li', { class: 'ph-' + t.phase },
      h('span', { class: 'marker', 'aria-hidden': 'true' }),
      h('div', { class: 'tl-body' },
        h('div', { class: 'tl-line' },
          h('strong', { text: phaseName(t.phase) }),
          timeEl(t.occurredAt),
          delta ? h('span', { class: 'muted delta', text: delta }) : null),
        t.message ? h('p', { class: 'tl-msg wrap', text: t.message }) : null)));
  }
  return ol;
}
