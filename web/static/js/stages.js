// @ts-check
// /projects/{p}/stages: a project's Kargo Stages as a pipeline graph
// (pipeline.js), kept live by the project's Stage stream (`stage` events
// carry the Stage object and `deleted`) and its Warehouse stream (each
// Warehouse's node: state, newest Freight, last discovery), with the
// Stages per phase and a find box. How a Stage and a Warehouse are read
// is kargo.js's.
import { h, setText } from './dom.js';
import { streams } from './urls.js';
import { connStates, live } from './stream.js';
import { STAGE_PHASES } from './kargo.js';
import { Pipeline } from './pipeline.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * @param {HTMLElement} main @param {{project: string}} params
 * @param {UI} ui @param {Scope} scope
 */
export function stagesPage(main, { project }, ui, scope) {
  ui.setTitle(`Stages · ${project}`);
  ui.setCrumbs([{ label: project }, { label: 'Stages' }]);
  main.classList.add('wide'); // a pipeline uses the whole width

  const countEl = h('span', { text: '–' });
  const chips = h('ul', { class: 'chips', id: 'stage-counts', 'aria-label': 'Stages per phase' });
  const filter = h('input', {
    type: 'search', id: 'stage-filter', placeholder: 'Find a stage', autocomplete: 'off',
    autocapitalize: 'none', spellcheck: 'false', 'aria-describedby': 'filter-status',
  });
  const filterStatus = h('span', { id: 'filter-status', class: 'muted small', role: 'status' });
  const loading = h('p', { class: 'empty', text: 'Loading stages…' });
  const empty = h('p', { class: 'empty', hidden: true, text: `No Stages or Warehouses in project ${project} yet. They appear here as soon as they are created (POST /api/v1/projects/${project}/stages, …/warehouses).` });

  let synced = false;
  const graph = new Pipeline(project, () => updateHead());
  scope.add(() => graph.close());
  const scroller = h('div', { class: 'pipeline', tabindex: '0', role: 'region', 'aria-label': 'Pipeline graph (scrolls)' }, graph.canvas);

  main.append(
    h('div', { class: 'page-head' },
      h('div', null,
        h('p', { class: 'eyebrow', text: `${project} · Kargo` }),
        h('h1', { text: 'Stages' }),
        h('p', { class: 'meta' }, countEl))),
    h('div', { class: 'head-chips' }, chips),
    h('section', { class: 'panel pipeline-panel', 'aria-labelledby': 'pipeline-title' },
      h('div', { class: 'panel-head' },
        h('h2', { id: 'pipeline-title', text: 'Pipeline' }),
        h('div', { class: 'tools' }, h('label', { for: 'stage-filter', class: 'sr-only', text: 'Find a stage' }), filter, filterStatus)),
      scroller, loading, empty));

  let countsKey = '';
  function updateHead() {
    const { nodes, whs, counts } = graph;
    if (graph.laidOut) setText(countEl, `${nodes.size} stage${nodes.size === 1 ? '' : 's'} · ${whs.size} warehouse${whs.size === 1 ? '' : 's'}`);
    loading.hidden = synced;
    const key = STAGE_PHASES.map((p) => counts.get(p) || 0).join(',');
    if (key !== countsKey) {
      countsKey = key;
      chips.replaceChildren(...STAGE_PHASES.filter((p) => counts.get(p)).map((p) =>
        h('li', { class: 'chip sp-' + p, dataset: { phase: p } }, h('span', { class: 'dot', 'aria-hidden': 'true' }), `${counts.get(p)} ${p.toLowerCase()}`)));
    }
    empty.hidden = nodes.size + whs.size > 0 || !loading.hidden;
    scroller.hidden = nodes.size + whs.size === 0;
    if (graph.query) find();
  }

  // Find: Stages whose name has the text stay bright, the rest dim; Enter
  // goes to the first.
  function find() {
    const { n, first } = graph.find(filter.value.trim().toLowerCase());
    setText(filterStatus, graph.query ? `${n} match${n === 1 ? '' : 'es'}` : '');
    return first;
  }
  filter.addEventListener('input', () => { find(); });
  filter.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    ev.preventDefault();
    const first = filter.value.trim() ? find() : null;
    if (first) {
      first.el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      /** @type {HTMLElement} */ (first.el.querySelector('a')).focus({ preventScroll: true });
    }
  });

  // A tab hidden while nodes go in takes the rest at once.
  scope.listen(document, 'visibilitychange', () => { if (document.hidden) graph.mountAll(); });

  const conn = connStates(ui.setConn);
  const stages = live(scope, {
    url: streams.stages(project),
    event: 'stage',
    key: (s) => s.metadata.name,
    deleted: (s) => s.deleted === true,
    apply: (changes) => graph.apply(changes),
    onSynced: () => {
      synced = true;
      if (!graph.working) updateHead();
    },
    onState: conn('stages'),
  }, () => {
    // A page that comes back is made current.
    graph.tick();
    graph.mountAll();
  });
  // The Warehouses: what each node shows, and those no Stage requests
  // from. (Closed with the page, as the Stage stream is: live() ties both
  // to the page's scope.)
  const warehouses = live(scope, {
    url: streams.warehouses(project),
    event: 'warehouse',
    key: (w) => w.metadata.name,
    deleted: (w) => w.deleted === true,
    apply: (changes) => graph.applyWarehouses(changes),
    onSynced: () => graph.warehousesSynced(),
    onState: conn('warehouses'),
  }, () => graph.tick());
  stages.start();
  warehouses.start();
  // "5m ago" moves on.
  scope.interval(() => graph.tick(), 15000);
}
