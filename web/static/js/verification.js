// @ts-check
// Kargo's verification of a Stage's current Freight: the phases as the
// pages read and colour them (the pipeline's nodes, the Stage page), and
// the Stage page's Verification section: the current Freight's
// verification history (status.freightHistory[0].verificationHistory,
// newest first), Reverify and Abort verification.
//
// A verification runs an Argo Rollouts AnalysisRun, which the server runs
// as a run of TaskActions: project = the AnalysisRun's namespace, domain
// "analysis", run = the lower-cased ULID of its name
// (<stage>.<ULID>.<freight collection>), else "a" and 25 hex digits of
// the name's sha256; each measurement is a child action of "analysis".
import { h, setAttr, setText } from './dom.js';
import { ApiError, abortStageVerification, reverifyStage } from './api.js';
import { pages } from './urls.js';
import { duration, ms, timeEl } from './format.js';
import { isControlFlow } from './kargo.js';

/** @typedef {import('./types.js').Stage} Stage */

/**
 * A verification of a Freight collection (Kargo's VerificationInfo).
 * @typedef {object} VerificationInfo
 * @property {string} [id]
 * @property {string} [actor]
 * @property {string} [startTime]
 * @property {string} [finishTime]
 * @property {string} [phase] Pending, Running, Successful, Failed, Error, Aborted, Inconclusive
 * @property {string} [message]
 * @property {{name?: string, namespace?: string, phase?: string}} [analysisRun]
 */

/** The domain of every AnalysisRun's run. */
export const DOMAIN = 'analysis';

const BAD = new Set(['Failed', 'Error', 'Aborted']);
const KNOWN = new Set(['Pending', 'Running', 'Successful', 'Failed', 'Error', 'Aborted', 'Inconclusive']);

/** The node's words for a phase: short, and saying what they are about. */
const LABEL = {
  Pending: 'Verify pending', Running: 'Verifying', Successful: 'Verified',
  Failed: 'Verify failed', Error: 'Verify error', Aborted: 'Verify aborted', Inconclusive: 'Inconclusive',
};

/** history is the current Freight's verifications, newest first (none
 * without current Freight). @param {Stage | null} s @returns {VerificationInfo[]} */
export function history(s) {
  const fh = s && s.status && Array.isArray(s.status.freightHistory) ? s.status.freightHistory : [];
  const cur = fh[0];
  const vh = cur && Array.isArray(cur.verificationHistory) ? cur.verificationHistory : [];
  return /** @type {VerificationInfo[]} */ (vh.filter(Boolean));
}

/** currentVerification is the current Freight's last verification, or
 * null. @param {Stage | null} s */
export function currentVerification(s) {
  return history(s)[0] || null;
}

/** phaseOf is a verification's phase; none yet is Pending (as Rollouts
 * reads an AnalysisRun without one). @param {VerificationInfo | null} v */
export function phaseOf(v) {
  return (v && v.phase) || 'Pending';
}

/** isTerminalVerification: the verification has ended (Kargo's IsTerminal). */
export function isTerminalVerification(phase) {
  return KNOWN.has(phase) && phase !== 'Pending' && phase !== 'Running';
}

/** isBad: the verification failed (red). */
export function isBad(phase) {
  return BAD.has(phase);
}

/** verificationClass colours a phase: pending and running blue,
 * successful green, failed, error and aborted red, inconclusive amber. */
export function verificationClass(phase) {
  return 'vp-' + (KNOWN.has(phase) ? phase : 'Unknown');
}

/** verificationLabel is a phase in the node's few words. */
export function verificationLabel(phase) {
  return LABEL[phase] || `Verification ${phase}`;
}

/** verificationTitle is a verification in a sentence (the node badge's
 * title): its phase and its message. @param {VerificationInfo} v */
export function verificationTitle(v) {
  return `Verification ${phaseOf(v)}${v.message ? `: ${v.message}` : ''}`;
}

/** verificationBadge is a phase: colour, dot and the phase in words. */
export function verificationBadge(phase) {
  return h('span', { class: 'badge ' + verificationClass(phase) }, h('span', { class: 'dot', 'aria-hidden': 'true' }), phase);
}

/** runOf is the run of an AnalysisRun (by its name), as the server names
 * it; "" where it cannot be worked out (no Web Crypto: not a secure context). */
export async function runOf(name) {
  const parts = name.split('.');
  if (parts.length >= 3 && parts[parts.length - 2].length === 26) return parts[parts.length - 2].toLowerCase();
  if (!(globalThis.crypto && crypto.subtle)) return '';
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(name)));
  return 'a' + [...sum].map((b) => b.toString(16).padStart(2, '0')).join('').slice(0, 25);
}

/** requested: the annotation (Kargo's VerificationRequest, JSON or a
 * bare ID) asks for something of the verification id.
 * @param {Stage} s @param {string} key @param {string | undefined} id */
function requested(s, key, id) {
  const v = ((s.metadata && s.metadata.annotations) || {})[key];
  if (!v || !id) return false;
  try {
    const r = JSON.parse(v);
    return !!r && typeof r === 'object' && r.id === id;
  } catch {
    return v.trim() === id;
  }
}

/**
 * The Stage page's Verification section: a panel of its own (el), its
 * buttons kept across redraws; update it with each version of the Stage,
 * close it when the page goes.
 */
export class VerificationPanel {
  /**
   * @param {object} o
   * @param {string} o.project
   * @param {string} o.stage
   * @param {(s: Stage) => void} o.onStage the Stage an operation answered with
   */
  constructor(o) {
    this.o = o;
    this.reverify = h('button', { type: 'button', class: 'btn small', id: 'reverify-stage', disabled: true, 'aria-busy': 'false', text: 'Reverify' });
    this.abort = h('button', { type: 'button', class: 'btn small danger', id: 'abort-verification', disabled: true, 'aria-busy': 'false', text: 'Abort verification' });
    this.error = h('p', { class: 'callout vp-Error verif-error wrap', id: 'verification-error', role: 'alert', hidden: true });
    this.status = h('p', { class: 'muted small verif-status', id: 'verification-status', role: 'status' });
    this.list = h('div', { class: 'verif-list' });
    this.el = h('section', { class: 'panel', id: 'stage-verification', 'aria-labelledby': 'verification-title' },
      h('div', { class: 'panel-head' },
        h('h2', { id: 'verification-title', text: 'Verification' }),
        h('div', { class: 'head-actions' }, this.reverify, this.abort)),
      h('div', { class: 'panel-body' }, this.error, this.status, this.list));
    /** @type {Stage | null} */
    this.s = null;
    this.busy = ''; // the operation on its way: reverify, abort or ''
    this.key = null;
    this.cur = ''; // the current verification's ID
    /** @type {Map<string, string>} AnalysisRun name -> its run ("" while worked out) */
    this.runs = new Map();
    this.closed = false;
    this.reverify.addEventListener('click', () => this.run('reverify'));
    this.abort.addEventListener('click', () => this.run('abort'));
  }

  /** update shows a version of the Stage (null: there is none). @param {Stage | null} s */
  update(s) {
    if (this.closed) return;
    this.s = s;
    const hist = history(s);
    // A new verification: an error said about the last one is old news.
    const id = hist.length ? hist[0].id || '' : '';
    if (id !== this.cur) this.error.hidden = true;
    this.cur = id;
    const cf = !!s && isControlFlow(s);
    const fh = s && s.status && Array.isArray(s.status.freightHistory) ? s.status.freightHistory : [];
    const key = JSON.stringify([!!s, cf, fh.length > 0, hist, [...this.runs]]);
    if (key !== this.key) {
      this.key = key;
      this.list.replaceChildren(...[this.draw(s, cf, fh.length > 0, hist)].flat());
    }
    this.buttons();
  }

  /** close: the page goes; answers still to come are dropped. */
  close() {
    this.closed = true;
  }

  /** @param {Stage | null} s @param {boolean} cf @param {boolean} hasFreight @param {VerificationInfo[]} hist */
  draw(s, cf, hasFreight, hist) {
    if (!s) return [];
    if (cf) return h('p', { class: 'empty', id: 'verification-empty', text: 'A control-flow stage has no Freight of its own to verify.' });
    if (!hasFreight) return h('p', { class: 'empty', id: 'verification-empty', text: 'No Freight to verify: nothing has been promoted to this stage yet.' });
    if (!hist.length) return h('p', { class: 'empty', id: 'verification-empty', text: 'The current Freight has not been verified yet: verification starts once the stage is healthy.' });
    const project = this.o.project;
    return h('ol', { class: 'verif-history', id: 'verification-history', 'aria-label': 'Verifications of the current Freight, newest first' }, hist.map((v, i) => {
      const phase = phaseOf(v);
      const ar = v.analysisRun;
      const run = ar && ar.name ? this.runOf(ar.name) : '';
      const took = v.startTime && v.finishTime ? duration(ms(v.finishTime) - ms(v.startTime)) : '';
      return h('li', { class: 'verif', dataset: { verification: v.id || String(i), phase } },
        h('div', { class: 'verif-line' },
          verificationBadge(phase),
          i === 0 ? h('span', { class: 'tag src', text: 'current' }) : null,
          v.actor ? h('span', { class: 'muted small verif-actor' }, 'by ', h('span', { class: 'wrap', text: v.actor })) : null),
        h('div', { class: 'verif-meta muted small' },
          v.startTime ? h('span', null, 'started ', timeEl(v.startTime)) : null,
          v.finishTime && isTerminalVerification(phase) ? h('span', null, 'finished ', timeEl(v.finishTime), took ? ` (${took})` : '') : null),
        v.message ? h('p', { class: `verif-msg small wrap${isBad(phase) ? ' bad' : ''}`, text: v.message }) : null,
        ar && ar.name ? h('p', { class: 'verif-run small' },
          h('span', { class: 'muted', text: 'AnalysisRun ' }),
          run ? h('a', { class: 'mono wrap', href: pages.run(ar.namespace || project, DOMAIN, run), text: ar.name })
            : h('span', { class: 'mono wrap', text: ar.name }),
          ar.phase ? h('span', { class: 'muted', text: ` · ${ar.phase}` }) : null)
          : null);
    }));
  }

  /** runOf is an AnalysisRun's run, worked out once ("" until then: the
   * list is drawn again when it is known). @param {string} name */
  runOf(name) {
    const have = this.runs.get(name);
    if (have !== undefined) return have;
    this.runs.set(name, '');
    runOf(name).then((r) => {
      if (this.closed || !r) return;
      this.runs.set(name, r);
      this.update(this.s);
    }, () => {});
    return '';
  }

  /** buttons: Reverify once the current verification has ended, Abort
   * while it is Pending or Running; each busy while its request, or the
   * request the Stage carries for it, waits for the controller. */
  buttons() {
    const s = this.s;
    const v = currentVerification(s);
    const phase = v ? phaseOf(v) : '';
    const ended = !!v && isTerminalVerification(phase);
    const reverifying = this.busy === 'reverify' || (!!s && ended && requested(s, 'kargo.akuity.io/reverify', v.id));
    const aborting = this.busy === 'abort' || (!!s && !!v && !ended && requested(s, 'kargo.akuity.io/abort', v.id));
    this.reverify.disabled = !ended;
    this.abort.disabled = !v || ended;
    // Busy, a button stays focusable (a disabled one would drop the
    // keyboard focus) and says it is not available now.
    for (const [b, on, label, idle] of /** @type {const} */ ([[this.reverify, reverifying, 'Reverifying…', 'Reverify'], [this.abort, aborting, 'Aborting…', 'Abort verification']])) {
      setAttr(b, 'aria-busy', String(on));
      setAttr(b, 'aria-disabled', on ? 'true' : null);
      setText(b, on ? label : idle);
    }
    if (reverifying && this.busy !== 'reverify') this.say('Reverify requested: the controller starts a new verification once the stage is healthy.');
    else if (aborting && this.busy !== 'abort') this.say('Abort requested: the controller stops the verification.');
    else if (!this.busy) this.say('');
  }

  /** @param {string} text */
  say(text) {
    setText(this.status, text);
  }

  /** run calls the operation; a refusal (409: no current Freight, never
   * verified) is shown as the error it is. @param {'reverify' | 'abort'} op */
  async run(op) {
    const b = op === 'reverify' ? this.reverify : this.abort;
    if (this.busy || b.disabled || b.getAttribute('aria-disabled') === 'true') return;
    this.busy = op;
    this.error.hidden = true;
    this.say(op === 'reverify' ? 'Asking for a new verification…' : 'Asking for the verification to be aborted…');
    this.buttons();
    try {
      const s = await (op === 'reverify' ? reverifyStage : abortStageVerification)(this.o.project, this.o.stage);
      if (this.closed) return;
      this.busy = '';
      this.say('');
      if (s && s.metadata) this.o.onStage(s);
    } catch (e) {
      if (this.closed) return;
      this.busy = '';
      this.say('');
      setText(this.error, `${op === 'reverify' ? 'Reverify' : 'Abort verification'} failed: ${e instanceof ApiError ? e.message : e}`);
      this.error.hidden = false;
    } finally {
      if (!this.closed) {
        this.busy = '';
        this.buttons();
      }
    }
  }
}
