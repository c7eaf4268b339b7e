// @ts-check
// What the Promotion page shows of a Promotion: its facts, its Freight and
// its steps, each drawn whole from the Promotion and its run's actions.
import { h } from './dom.js';
import { pages } from './urls.js';
import { phaseName, timeEl } from './format.js';
import { artifactList, freightLabel, originText, short } from './freight.js';
import { DOMAIN, freightName, isTerminalPromotion, promoBadge, promotionPhase, startOf, startedAt, stepAction, stepBadge } from './promotions.js';

/** @typedef {import('./types.js').Promotion} Promotion */
/** @typedef {import('./types.js').Freight} Freight */
/** @typedef {import('./types.js').ActionEvent} ActionEvent */

/** facts is the Promotion in a few facts.
 * @param {Promotion} pr @param {string} project @param {string} run its run ("" while unknown) */
export function facts(pr, project, run) {
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
    startOf(pr) > 1 ? ['Started over', h('span', { id: 'promotion-start', text: `start ${startOf(pr)}: its working directory was lost, so its steps run again from the first` })] : null,
    ['Run', run ? h('a', { class: 'mono', href: pages.run(project, DOMAIN, run), text: run }) : '—'],
  ].filter(Boolean);
  return h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', null, v)]));
}

/** freightPanel is the Freight the Promotion promotes.
 * @param {Promotion} pr @param {Freight | null} freight the Freight, once read */
export function freightPanel(pr, freight) {
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

/** stepList is the Promotion's steps in order, with their actions' attempts.
 * @param {Promotion} pr @param {string} project @param {string} run
 * @param {Map<string, ActionEvent>} actions the run's actions by name */
export function stepList(pr, project, run, actions) {
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
    const name = stepAction(pr, i);
    const a = actions.get(name);
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
          a && run ? h('a', { href: `${pages.run(project, DOMAIN, run)}#action=${name}`, 'aria-label': `Action of step ${alias}`, text: `action ${name}` }) : null)
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
