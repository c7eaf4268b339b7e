// @ts-check
// Phases, times and durations as the pages show them.
import { h } from './dom.js';

/** The public phases, in lifecycle order. */
export const PHASES = [
  'QUEUED', 'WAITING_FOR_RESOURCES', 'INITIALIZING', 'RUNNING', 'PAUSED',
  'SUCCEEDED', 'RECOVERED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'UNSPECIFIED',
];

const TERMINAL = new Set(['SUCCEEDED', 'RECOVERED', 'FAILED', 'ABORTED', 'TIMED_OUT']);

/** isTerminal: a terminal phase never changes again. */
export function isTerminal(phase) {
  return TERMINAL.has(phase);
}

/** phaseName is the phase for people: "TIMED_OUT" -> "Timed out". */
export function phaseName(phase) {
  const p = (phase || 'UNSPECIFIED').replaceAll('_', ' ').toLowerCase();
  return p.charAt(0).toUpperCase() + p.slice(1);
}

/** phaseClass is the CSS class that colours a phase. */
export function phaseClass(phase) {
  return 'ph-' + (phase || 'UNSPECIFIED');
}

/** badge is a coloured phase label. */
export function badge(phase) {
  return h('span', { class: 'badge ' + phaseClass(phase) }, h('span', { class: 'dot', 'aria-hidden': 'true' }), phaseName(phase));
}

/** updateBadge changes a badge made by badge() to another phase. */
export function updateBadge(el, phase) {
  const cls = 'badge ' + phaseClass(phase);
  if (el.className !== cls) el.className = cls;
  const label = phaseName(phase);
  if (el.lastChild.textContent !== label) el.lastChild.textContent = label;
}

/** ms parses an RFC 3339 time; NaN when absent. */
export function ms(iso) {
  return iso ? Date.parse(iso) : NaN;
}

/** duration is the one way the pages write a duration: "<1s", 4s,
 * 3m 05s, 2h 07m, 3d 4h. To the second, since the times it is measured
 * between (Kubernetes timestamps) have one-second resolution: a run that
 * took 400 ms reads "<1s" in the runs list, on its run page and on its
 * Promotion's page alike. */
export function duration(millis) {
  if (!Number.isFinite(millis) || millis < 0) return '–';
  if (millis < 1000) return '<1s';
  const s = Math.floor(millis / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const hr = Math.floor(m / 60);
  if (hr < 24) return `${hr}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(hr / 24)}d ${hr % 24}h`;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dateTimeFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** shortTime: the time of day for today, else the date and minute. */
export function shortTime(iso) {
  const t = ms(iso);
  if (!Number.isFinite(t)) return '–';
  const d = new Date(t);
  return d.toDateString() === new Date().toDateString() ? timeFmt.format(d) : dateTimeFmt.format(d);
}

/** fullTime is the date and time, for titles and details. */
export function fullTime(iso) {
  const t = ms(iso);
  return Number.isFinite(t) ? fullFmt.format(new Date(t)) : '–';
}

/** timeEl is a <time> with the short form shown and the full one as title. */
export function timeEl(iso) {
  return h('time', { datetime: iso || null, title: iso ? fullTime(iso) : null, text: shortTime(iso) });
}

const WAITING = new Set(['UNSPECIFIED', 'QUEUED', 'WAITING_FOR_RESOURCES']);

/** notStarted: the action is still waiting to start, or was aborted before
 * it started; it has no running time to show. */
export function notStarted(a) {
  if (WAITING.has(a.phase || 'UNSPECIFIED')) return true;
  return a.phase === 'ABORTED' && (a.phaseHistory || []).every((t) => WAITING.has(t.phase) || t.phase === 'ABORTED');
}

/** actionSpan is when an action started and ended (NaN while it runs). */
export function actionSpan(a) {
  const start = ms(a.createdAt);
  let end = NaN;
  if (isTerminal(a.phase)) {
    const hist = a.phaseHistory || [];
    const last = hist.length ? hist[hist.length - 1] : null;
    end = last && last.phase === a.phase ? ms(last.occurredAt) : ms(a.updatedAt);
  }
  return { start, end, notStarted: notStarted(a) };
}

/** spanDuration is the duration of a span, up to now while it runs. */
export function spanDuration({ start, end, notStarted: waiting }, now = Date.now()) {
  if (waiting) return 'not started';
  if (!Number.isFinite(start)) return '–';
  return duration((Number.isFinite(end) ? end : now) - start);
}

const collator = new Intl.Collator(undefined, { numeric: true });

/** compareNames orders names naturally: a2 before a10. */
export function compareNames(a, b) {
  return collator.compare(a, b);
}

/** phaseChips: one small count per phase that has actions, with the phase
 * named. */
/** @param {Record<string, number>} counts */
export function phaseChips(counts) {
  const ul = h('ul', { class: 'chips' });
  for (const p of PHASES) {
    const n = counts[p];
    if (!n) continue;
    // The words, not only a colour: failed and timed out are both red.
    ul.append(h('li', { class: 'chip ' + phaseClass(p), title: `${n} ${phaseName(p).toLowerCase()}` },
      h('span', { class: 'dot', 'aria-hidden': 'true' }), `${n} ${phaseName(p).toLowerCase()}`));
  }
  return ul;
}

/** cacheName is a cache status in words ("–" when caching is off).
 * @param {string} [c] */
export function cacheName(c) {
  return !c || c === 'DISABLED' ? '–' : c.replaceAll('_', ' ').toLowerCase();
}
