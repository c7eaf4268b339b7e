// @ts-check
// /projects/{p}/domains/{d}/runs/{r}: the run's action tree, kept live by the
// run stream (`action` events carry Action + deleted), with a detail panel
// for the selected action and abort.
import { h, setAttr, setText } from './dom.js';
import { abortAction, deleteRun, getRun, listRunActions } from './api.js';
import { pages, streams } from './urls.js';
import { live } from './stream.js';
import { badge, fullTime, isTerminal, phaseChips, shortTime, spanDuration, updateBadge } from './format.js';
import { confirmAbort, toast } from './dialog.js';
import { ActionTree } from './tree.js';
import { cancelFrame, onFrame } from './frame.js';
import { RunFind } from './find.js';
import { DetailPanel } from './detail.js';
import * as store from './store.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * @param {HTMLElement} main @param {{project: string, domain: string, run: string}} params
 * @param {UI} ui @param {Scope} scope
 */
export function runPage(main, { project, domain, run }, ui, scope) {
  store.remember(project, domain);
  ui.setTitle(`${run} · ${project}/${domain}`);
  ui.setCrumbs([{ label: `${project} / ${domain}`, href: pages.runs(project, domain) }, { label: run }]);

  // Page head: the run, its root's phase, counts, and abort.
  const runBadge = badge('UNSPECIFIED');
  runBadge.hidden = true;
  // The root's phase alone would hide what else happened in the run.
  const runNote = h('span', { class: 'run-note', id: 'run-note', hidden: true });
  const started = h('span', { text: '–' });
  const runDur = h('span', { text: '–' });
  // Counted once the stream's snapshot is in, not before: "0 actions"
  // while a large run loads would not be so.
  const count = h('span', { id: 'run-count', text: 'Loading…' });
  const chips = h('div', { class: 'head-chips', role: 'group', 'aria-label': 'Actions per phase' });
  const abortRun = h('button', { type: 'button', class: 'btn danger', id: 'abort-run', disabled: true, text: 'Abort run' });
  const deleteRunBtn = h('button', { type: 'button', class: 'btn danger', id: 'delete-run', hidden: true, text: 'Delete run' });
  main.append(h('div', { class: 'page-head' },
    h('div', null,
      h('p', { class: 'eyebrow', text: `${project} / ${domain} · run` }),
      h('h1', null, h('span', { class: 'mono', text: run }), runBadge, runNote),
      h('p', { class: 'meta' }, h('span', null, 'Started ', started), h('span', null, 'Duration ', runDur), count)),
    h('div', { class: 'head-actions' }, abortRun, deleteRunBtn)), chips);

  // The tree and the detail panel.
  const treeEl = h('div', { class: 'tree', role: 'tree', id: 'tree', 'aria-labelledby': 'tree-title' });
  const loading = h('p', { class: 'empty', text: 'Loading actions…' });
  const empty = h('p', { class: 'empty', hidden: true, text: 'No actions in this run yet. They appear here as soon as they are enqueued.' });
  // A run the server does not know (a mistyped URL): said so, not "no
  // actions yet" forever. Its actions would still appear if enqueued.
  const missing = h('div', { class: 'empty', id: 'run-missing', role: 'status', hidden: true },
    h('p', { text: `There is no run ${run} in ${project} / ${domain}.` }),
    h('p', null, h('a', { href: pages.runs(project, domain), text: `The runs of ${project} / ${domain}` })));
  // Filled once the tree is made (find works on its model).
  const findBar = h('div', { class: 'find-bar' });
  const detail = h('aside', { class: 'panel detail', id: 'detail', 'aria-labelledby': 'detail-title' });
  main.append(h('div', { class: 'layout' },
    h('section', { class: 'panel tree-panel', 'aria-labelledby': 'tree-title' },
      h('div', { class: 'panel-head' },
        h('h2', { id: 'tree-title', text: 'Actions' }),
        h('div', { class: 'tools' },
          h('button', { type: 'button', class: 'btn small', text: 'Expand all', onclick: () => tree.expandAll(true) }),
          h('button', { type: 'button', class: 'btn small', text: 'Collapse all', onclick: () => tree.expandAll(false) }))),
      findBar,
      h('div', { class: 'tree-cols', 'aria-hidden': 'true' },
        h('span', { text: 'Action' }), h('span', { class: 'c-type', text: 'Type' }), h('span', { text: 'Phase' }),
        h('span', { class: 'num' }, h('span', { class: 'long', text: 'Attempts' }), h('span', { class: 'short', text: '#' })),
        h('span', { class: 'c-cache', text: 'Cache' }),
        h('span', { class: 'num' }, h('span', { class: 'long', text: 'Duration' }), h('span', { class: 'short', text: 'Time' }))),
      treeEl, loading, empty, missing),
    detail));

  const abort = (name, what) => confirmAbort({
    heading: `Abort ${what} ${what === 'run' ? run : name}?`,
    text: `${name === tree.rootName ? 'Every action of the run' : `Action ${name} and every action under it`} that has not finished will end ABORTED. This cannot be undone.`,
    confirm: `Abort ${what}`,
    run: (reason) => abortAction(project, domain, run, name, reason),
    done: () => toast(`Abort requested for ${what} ${what === 'run' ? run : name}.`),
  });
  abortRun.addEventListener('click', () => tree.rootName && abort(tree.rootName, 'run'));
  deleteRunBtn.addEventListener('click', () => confirmAbort({
    heading: `Delete run ${run}?`,
    text: `Every action of the run and its record here go. This cannot be undone.`,
    confirm: 'Delete run',
    noReason: true,
    run: () => deleteRun(project, domain, run),
    done: () => ui.navigate(pages.runs(project, domain)),
  }));

  const panel = new DetailPanel(detail, {
    ids: { project, domain, run },
    abort: (name) => abort(name, 'action'),
    select: (name) => tree.select(name, { focus: true, reveal: true }),
  });

  const tree = new ActionTree(treeEl, {
    onSelect: (a, removed) => {
      panel.show(a, removed);
      const hash = a ? `#action=${encodeURIComponent(a.actionId.name)}` : '';
      if (location.hash !== hash) history.replaceState(null, '', location.pathname + location.search + hash);
    },
    // Once a frame, however many batches came in it (the rest of a large
    // run comes in slices, and find goes through every action), and in the
    // frame that paints them.
    onChange: () => onFrame(changed),
  });
  const changed = () => {
    updateHead();
    find.changed();
  };
  scope.add(() => cancelFrame(changed));
  const find = new RunFind(tree);
  findBar.append(find.el);

  function updateHead() {
    const root = tree.rootName ? tree.nodes.get(tree.rootName) : null;
    if (root) {
      runBadge.hidden = false;
      updateBadge(runBadge, root.a.phase);
      setText(started, shortTime(root.a.createdAt));
      setAttr(started, 'title', fullTime(root.a.createdAt));
      setText(runDur, spanDuration(root.span));
    }
    // A finished run (every action finished) may be deleted; until then it
    // may be aborted, even when its root has finished.
    const finished = tree.nodes.size > 0 && [...tree.counts.keys()].every(isTerminal);
    abortRun.disabled = !root || finished;
    deleteRunBtn.hidden = !finished;
    setAttr(abortRun, 'title', !root ? 'The run has no root action yet' : finished ? 'The run has finished' : null);
    const note = root && isTerminal(root.a.phase) ? runNoteText(tree.counts, root.a.phase) : '';
    setText(runNote, note);
    runNote.hidden = !note;
    const n = tree.nodes.size;
    setText(count, loading.hidden ? `${n} action${n === 1 ? '' : 's'}` : 'Loading…');
    const key = JSON.stringify([...tree.counts]);
    if (chips.dataset.key !== key) {
      chips.dataset.key = key;
      chips.replaceChildren(phaseChips(Object.fromEntries(tree.counts)));
    }
    empty.hidden = n > 0 || !loading.hidden || !missing.hidden;
    if (n > 0) missing.hidden = true;
  }

  // checkExists asks, when the run has no actions, whether the server
  // knows it at all.
  function checkExists() {
    if (tree.nodes.size > 0) return;
    getRun(project, domain, run).then(() => {}, (e) => {
      if (e.status !== 404 || tree.nodes.size > 0) return;
      missing.hidden = false;
      updateHead();
    });
  }

  let first = true;
  scope.add(() => { tree.close(); panel.close(); });
  const actions = live(scope, {
    url: streams.run(project, domain, run),
    event: 'action',
    key: (a) => a.actionId.name,
    // A first view of 500 actions paints before a large run has arrived;
    // the rest comes from the run's list, page by page.
    window: 500,
    rest: (after) => listRunActions(project, domain, run, after, PAGE),
    // No `deleted`: a deleted action stays, in its last phase (ABORTED when
    // it had not finished: an abort deletes, as Flyte's does), as history
    // keeps it and a reload shows it. Deleting the run leaves the page.
    apply: (changes) => tree.apply(changes),
    onSynced: () => {
      loading.hidden = true;
      updateHead();
      if (first) {
        first = false;
        checkExists();
        // An action named in the URL (#action=name) is selected on arrival.
        const name = hashAction();
        if (name && tree.nodes.has(name)) tree.select(name, { focus: false, reveal: true });
      }
    },
    onState: ui.setConn,
  });
  actions.start();

  // A link or a person may change #action=name: select it.
  scope.listen(window, 'hashchange', () => {
    const name = hashAction();
    if (name && name !== tree.selected && tree.nodes.has(name)) tree.select(name, { focus: true, reveal: true });
  });

  scope.interval(() => {
    tree.tick();
    panel.tick();
    updateHead();
  }, 1000);
}

// PAGE is how many actions the run page asks the list for at a time. The
// browser decodes and parses a page in one task: with pages of 2,000 (a
// megabyte of JSON) that task still took 95 to 114 ms on 2 busy cores.
// Pages of 1,000 bring a run of 50,000 in as fast (the next page is asked
// for while one goes in); pages of 500, two fifths slower (twice the
// requests).
const PAGE = 1000;

/** runNoteText says what else happened in a run whose root finished in
 * rootPhase: "with 1 failed, 1 timed out, 1 aborted, 1 not started" (the
 * root not counted); empty when every other action succeeded. */
/** @param {Map<string, number>} counts @param {string} rootPhase */
export function runNoteText(counts, rootPhase) {
  const n = (phases) => phases.reduce((sum, p) => sum + (counts.get(p) || 0), 0) - (phases.includes(rootPhase) ? 1 : 0);
  /** @type {[number, string][]} */
  const parts0 = [
    [n(['FAILED']), 'failed'],
    [n(['TIMED_OUT']), 'timed out'],
    [n(['ABORTED']), 'aborted'],
    [n(['INITIALIZING', 'RUNNING', 'PAUSED']), 'still running'],
    [n(['UNSPECIFIED', 'QUEUED', 'WAITING_FOR_RESOURCES']), 'not started'],
  ];
  const parts = parts0.filter(([k]) => k > 0).map(([k, what]) => `${k} ${what}`);
  return parts.length ? 'with ' + parts.join(', ') : '';
}

/** hashAction is the action named by the URL's #action=name, or null. */
function hashAction() {
  const m = /^#action=(.+)$/.exec(location.hash);
  try {
    return m ? decodeURIComponent(m[1]) : null;
  } catch {
    return null; // not an encoding we made
  }
}
