// @ts-check
// /projects/{p}/domains/{d}: the runs of a project and domain, newest first,
// kept live by the project-domain stream (`run` events carry RunSummary).
// The stream's snapshot holds the newest 1,000; older runs come a page at a
// time from the REST list ("Show older runs").
import { h, setAttr, setText } from './dom.js';
import { listRuns } from './api.js';
import { pages, streams } from './urls.js';
import { toast } from './dialog.js';
import { live } from './stream.js';
import { PHASES, badge, duration, ms, phaseChips, phaseName, shortTime, fullTime, updateBadge } from './format.js';
import * as store from './store.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */
/** @typedef {import('./types.js').RunSummary} RunSummary */

// SNAPSHOT_RUNS is how many runs the stream's snapshot holds at most
// (runs.SnapshotRuns on the server).
const SNAPSHOT_RUNS = 1000;

/**
 * @param {HTMLElement} main @param {{project: string, domain: string}} params
 * @param {UI} ui @param {Scope} scope
 */
export function runsPage(main, { project, domain }, ui, scope) {
  store.remember(project, domain);
  ui.setTitle(`Runs · ${project}/${domain}`);
  ui.setCrumbs([{ label: `${project} / ${domain}` }]);

  const tbody = h('tbody');
  const loading = h('p', { class: 'empty', text: 'Loading runs…' });
  const empty = h('p', { class: 'empty', hidden: true, text: `No runs in ${project} / ${domain} yet. A run appears here as soon as its first action is enqueued.` });
  const table = h('table', { class: 'runs' },
    h('caption', { class: 'sr-only', text: `Runs of ${project} / ${domain}, newest first` }),
    h('thead', null, h('tr', null,
      h('th', { scope: 'col', text: 'Run' }),
      h('th', { scope: 'col', text: 'Phase' }),
      h('th', { scope: 'col', class: 'num', text: 'Actions' }),
      h('th', { scope: 'col', class: 'col-counts', text: 'By phase' }),
      h('th', { scope: 'col', class: 'col-started', text: 'Started' }),
      h('th', { scope: 'col', class: 'num', text: 'Duration' }))),
    tbody);
  // Filters, kept in the URL (?q=name&phase=PHASE) so that a link shares the view.
  const params = new URLSearchParams(location.search);
  const query = h('input', { type: 'search', id: 'run-filter', placeholder: 'Run name contains…', value: params.get('q') || '', autocomplete: 'off' });
  const phaseSel = h('select', { id: 'phase-filter' },
    h('option', { value: '', text: 'Any phase' }),
    PHASES.filter((p) => p !== 'UNSPECIFIED').map((p) => h('option', { value: p, text: phaseName(p) })));
  phaseSel.value = PHASES.includes(params.get('phase')) ? params.get('phase') : '';
  const shown = h('span', { class: 'muted', id: 'runs-shown', 'aria-live': 'polite' });
  const noMatch = h('p', { class: 'empty', id: 'no-match', hidden: true, text: 'No run matches the filters.' });
  const older = h('button', { type: 'button', class: 'btn', id: 'runs-older', hidden: true, text: 'Show older runs' });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (ev) => ev.preventDefault() },
    h('label', { for: 'run-filter', class: 'sr-only', text: 'Run name contains' }), query,
    h('label', { for: 'phase-filter', class: 'sr-only', text: 'Phase' }), phaseSel, shown);
  main.append(
    h('div', { class: 'page-head' },
      h('div', null,
        h('p', { class: 'eyebrow', text: `${project} / ${domain}` }),
        h('h1', { text: 'Runs' }))),
    filters,
    h('section', { class: 'panel', 'aria-label': 'Runs' }, h('div', { class: 'table-wrap' }, table), loading, empty, noMatch,
      h('div', { class: 'more' }, older)));

  function matches(s) {
    const q = query.value.trim().toLowerCase();
    return (!q || s.run.name.toLowerCase().includes(q)) && (!phaseSel.value || s.phase === phaseSel.value);
  }

  function filter() {
    let n = 0;
    for (const row of rows.values()) {
      const show = matches(row.s);
      if (row.tr.hidden === show) row.tr.hidden = !show;
      if (show) n++;
    }
    const active = query.value.trim() !== '' || phaseSel.value !== '';
    setText(shown, active ? `${n} of ${rows.size} runs` : '');
    noMatch.hidden = !active || n > 0 || rows.size === 0;
  }

  function filtersChanged() {
    const next = new URLSearchParams();
    if (query.value.trim()) next.set('q', query.value.trim());
    if (phaseSel.value) next.set('phase', phaseSel.value);
    const qs = next.toString();
    history.replaceState(null, '', location.pathname + (qs ? '?' + qs : '') + location.hash);
    filter();
  }
  query.addEventListener('input', filtersChanged);
  phaseSel.addEventListener('change', filtersChanged);

  const rows = new Map(); // run name -> {tr, cells, s}

  // Older runs: the first page is the runs started before the oldest shown
  // (a millisecond later, since names break ties: duplicates are dropped),
  // the next ones follow its continue token.
  let olderQuery = null;
  older.addEventListener('click', async () => {
    if (!olderQuery) {
      let oldest = Infinity;
      for (const r of rows.values()) oldest = Math.min(oldest, ms(r.s.startedAt));
      olderQuery = new URLSearchParams({ limit: '100', startedBefore: new Date(oldest + 1).toISOString() });
    }
    older.disabled = true;
    try {
      // Runs that start in the same millisecond fill a page with runs
      // already shown: read on until one is new.
      for (let n = 0; n < 50; n++) {
        const page = await listRuns(project, domain, olderQuery);
        const fresh = page.items.filter((s) => !rows.has(s.run.name));
        apply(new Map(fresh.map((s) => [s.run.name, s])));
        if (page.continue) olderQuery.set('continue', page.continue);
        older.hidden = !page.continue;
        if (fresh.length || !page.continue) break;
      }
    } catch (e) {
      toast(`Could not load older runs: ${e.message}`);
    } finally {
      older.disabled = false;
    }
  });

  function makeRow(s) {
    const name = s.run.name;
    const cells = {
      phase: badge(s.phase),
      count: h('td', { class: 'num' }),
      counts: h('td', { class: 'col-counts' }),
      started: h('time'),
      dur: h('td', { class: 'num' }),
    };
    const tr = h('tr', { dataset: { run: name } },
      h('th', { scope: 'row' }, h('a', { href: pages.run(project, domain, name), text: name })),
      h('td', null, cells.phase),
      cells.count,
      cells.counts,
      h('td', { class: 'col-started' }, cells.started),
      cells.dur);
    return { tr, cells, s: null };
  }

  function update(row, s) {
    const prev = row.s;
    row.s = s;
    setAttr(row.tr, 'data-phase', s.phase);
    updateBadge(row.cells.phase, s.phase);
    setText(row.cells.count, String(s.actionCount));
    const counts = JSON.stringify(s.phaseCounts || {});
    if (!prev || JSON.stringify(prev.phaseCounts || {}) !== counts) {
      row.cells.counts.replaceChildren(phaseChips(s.phaseCounts || {}));
    }
    setAttr(row.cells.started, 'datetime', s.startedAt);
    setAttr(row.cells.started, 'title', fullTime(s.startedAt));
    setText(row.cells.started, shortTime(s.startedAt));
    tick(row);
  }

  function tick(row) {
    const s = row.s;
    const end = s.endedAt ? ms(s.endedAt) : Date.now();
    setText(row.cells.dur, duration(end - ms(s.startedAt)));
  }

  function apply(changes) {
    let reorder = false;
    for (const [name, s] of changes) {
      let row = rows.get(name);
      if (s === null) {
        if (row) row.tr.remove();
        rows.delete(name);
        continue;
      }
      if (!row) {
        row = makeRow(s);
        rows.set(name, row);
        reorder = true;
      } else if (row.s.startedAt !== s.startedAt) {
        reorder = true;
      }
      update(row, s);
    }
    if (reorder) sortRows();
    empty.hidden = rows.size > 0;
    filter();
  }

  // Newest first. Only new runs move rows, so sorting all of them then is cheap.
  function sortRows() {
    const sorted = [...rows.values()].sort((a, b) => (ms(b.s.startedAt) - ms(a.s.startedAt)) || b.s.run.name.localeCompare(a.s.run.name));
    let i = 0;
    for (const el of tbody.children) {
      if (el !== sorted[i].tr) break;
      i++;
    }
    if (i < sorted.length) tbody.append(...sorted.slice(i).map((r) => r.tr));
  }

  // A whole row is a link target for the mouse; the name is the link for the keyboard.
  tbody.addEventListener('click', (ev) => {
    const target = /** @type {Element} */ (ev.target);
    const tr = /** @type {HTMLElement | null} */ (target.closest('tr[data-run]'));
    if (!tr || target.closest('a') || String(window.getSelection())) return;
    ui.navigate(pages.run(project, domain, tr.dataset.run));
  });

  const runs = live(scope, {
    url: streams.runs(project, domain),
    event: 'run',
    key: (s) => s.run.name,
    deleted: (s) => s.deleted === true, // the run's last action was deleted
    apply,
    onSynced: () => {
      loading.hidden = true;
      empty.hidden = rows.size > 0;
      // A full snapshot may not be all there is.
      if (!olderQuery) older.hidden = runs.items.size < SNAPSHOT_RUNS;
    },
    onState: ui.setConn,
  });
  runs.start();
  scope.interval(() => {
    for (const row of rows.values()) if (!row.s.endedAt) tick(row);
  }, 1000);
}
