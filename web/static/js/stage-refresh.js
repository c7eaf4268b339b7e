// @ts-check
// The Stage page's Refresh: the button, its spinner and what it says. The
// spinner runs while our request waits (?wait=true answers once
// status.lastHandledRefresh caught up with the annotation) and, as in
// Kargo's UI, whenever the Stage shows a refresh not handled yet.
import { h, setAttr, setText } from './dom.js';
import { ApiError, refreshStage } from './api.js';
import { toast } from './dialog.js';
import { refreshPending, refreshToken } from './kargo.js';

/** @typedef {import('./types.js').Stage} Stage */

const REFRESHED = () => `Refreshed ${new Date().toLocaleTimeString()}: the controller has reconciled the stage.`;

export class RefreshControl {
  /**
   * @param {object} o
   * @param {string} o.project
   * @param {string} o.stage
   * @param {() => Stage | null} o.current the Stage shown
   * @param {() => boolean} o.gone the Stage is not there
   * @param {(s: Stage) => void} o.onStage the Stage the refresh answered with
   */
  constructor(o) {
    this.o = o;
    this.spinner = h('span', { class: 'spinner', hidden: true, 'aria-hidden': 'true' });
    this.label = h('span', { text: 'Refresh' });
    this.button = h('button', { type: 'button', class: 'btn', id: 'refresh-stage', disabled: true, 'aria-busy': 'false', 'aria-describedby': 'refresh-status' }, this.spinner, this.label);
    this.status = h('p', { class: 'refresh-status muted', id: 'refresh-status', role: 'status' });
    this.inflight = false;
    this.handled = ''; // the refresh our last request saw handled
    this.wasOn = false;
    this.button.addEventListener('click', () => this.click());
  }

  /** @param {string} text */
  say(text) {
    setText(this.status, text);
  }

  spinning() {
    const cur = this.o.current();
    return this.inflight || (!!cur && refreshPending(cur) && refreshToken(cur) !== this.handled);
  }

  /** update shows the state of the refresh (after each change of the Stage). */
  update() {
    const cur = this.o.current();
    const on = this.spinning();
    if (this.wasOn && !on && !this.inflight && cur && !refreshPending(cur)) this.say(REFRESHED());
    this.wasOn = on;
    this.spinner.hidden = !on;
    setText(this.label, on ? 'Refreshing…' : 'Refresh');
    setAttr(this.button, 'aria-busy', String(on));
    // Busy, the button stays focusable (a disabled one would drop the
    // keyboard focus) and says it is not available now.
    setAttr(this.button, 'aria-disabled', on ? 'true' : null);
    this.button.disabled = this.o.gone() || !cur;
    if (on) this.say('Refreshing: waiting for the controller to reconcile the stage…');
  }

  async click() {
    if (this.spinning() || !this.o.current()) return;
    this.inflight = true;
    this.update();
    try {
      const s = await refreshStage(this.o.project, this.o.stage, true);
      const t = s ? refreshToken(s) : '';
      if (s && t && s.status && s.status.lastHandledRefresh === t) {
        this.handled = t;
        this.o.onStage(s);
        this.say(REFRESHED());
      } else {
        this.say('Refresh requested; the page follows the stage as the controller handles it.');
      }
    } catch (e) {
      this.say(`Refresh failed: ${e instanceof ApiError ? e.message : e}`);
      toast(`Refresh of ${this.o.stage} failed.`);
    } finally {
      this.inflight = false;
      this.wasOn = false; // the answer said how it went
      this.update();
    }
  }
}
