// /projects/{p}/stages: a project's Kargo Stages as a pipeline graph, kept
// live by the project's Stage stream (`stage` events carry the Stage object
// and `deleted`). How a Stage is read is kargo.js's.
//
// Built for 600+ Stages (akuity/kargo #5133, #4396): a burst of events is
// applied once per animation frame (live.js); a status change rewrites only
// the texts of its node that changed; the graph is laid out again only when
// its edges or members change, by pure computation on fixed node sizes
// (graph.js), so nothing reads layout; nodes off screen are not rendered
// (content-visibility).
import { h, setAttr, setText } from './dom.js';
import { LiveCollection, keepCurrent } from './live.js';
import { fullTime, ms } from './format.js';
import { GRID, edgePath, layout } from './graph.js';
import {
  STAGE_PHASES, freightText, health, healthClass, healthText, isControlFlow, refreshPending, relTime,
  sources, stageBadge, stageColor, stagePages, stagePhase, stageStreams, updateStageBadge,
} from './kargo.js';

// The pipeline page.

// setHidden hides or shows an element if that changes anything (setting
// hidden to what it is would still be a mutation).
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

export function stagesPage(main, { project }, ui) {
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
  const empty = h('p', { class: 'empty', hidden: true, text: `No Stages in project ${project} yet. They appear here as soon as they are created (POST /api/v1/projects/${project}/stages).` });

  // The canvas: one SVG for every edge under a list of absolutely placed
  // nodes, both sized from the layout.
  const svgHost = h('div');
  svgHost.innerHTML = '<svg class="edges" aria-hidden="true" focusable="false"></svg>';
  const svg = svgHost.firstChild;
  const SVG_NS = svg.namespaceURI;
  const list = h('ul', { class: 'nodes', 'aria-label': `Stages of ${project}, by column from the Warehouses` });
  const canvas = h('div', { class: 'graph', id: 'graph' }, svg, list);
  for (const [k, v] of Object.entries({ '--node-w': GRID.nodeW, '--wh-w': GRID.whW, '--node-h': GRID.nodeH, '--plain-h': GRID.plainH, '--wh-h': GRID.whH })) {
    canvas.style.setProperty(k, v + 'px');
  }
  const scroller = h('div', { class: 'pipeline', tabindex: '0', role: 'region', 'aria-label': 'Pipeline graph (scrolls)' }, canvas);

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

  const nodes = new Map(); // stage name -> node
  const whs = new Map(); // warehouse name -> {el, t}
  const edges = new Map(); // "from>to" (node ids) -> {el, d}
  let nEdges = 0;
  const counts = new Map(); // phase -> number of Stages
  let query = '';

  function makeNode(name) {
    const el = nodeTemplate.cloneNode(true);
    const top = el.firstElementChild;
    const state = top.nextElementSibling;
    const fr = state.nextElementSibling;
    const pr = fr.nextElementSibling;
    const link = top.firstElementChild;
    link.textContent = name;
    link.setAttribute('href', stagePages.stage(project, name));
    el.setAttribute('data-stage', name);
    const node = {
      name, el, from: pr.nextElementSibling, t: '', key: null, src: null, phase: null, health: null, cf: null, color: null,
      refreshing: top.lastElementChild,
      badge: state.firstElementChild,
      healthEl: state.lastElementChild,
      freight: fr.lastElementChild,
      freightK: fr.firstElementChild,
      promo: pr.lastElementChild,
      promoK: pr.firstElementChild,
      promoName: '', promoAt: '',
    };
    if (query) el.classList.toggle('dim', !name.includes(query));
    return node;
  }

  function count(phase, d) {
    const n = (counts.get(phase) || 0) + d;
    if (n > 0) counts.set(phase, n);
    else counts.delete(phase);
  }

  // fill writes the Stage into its node, touching only what changed.
  function fill(node, s, now) {
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
      node.healthEl.lastChild.nodeValue = healthText(hs);
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
    node.promoName = (lp && lp.name) || '';
    node.promoAt = (lp && lp.finishedAt) || '';
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

  function promoText(node, now) {
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

  // apply takes the stream's changes (once per frame, or the whole
  // snapshot at once). They are worked off in slices of a few milliseconds,
  // yielding in between, so that no task runs long however big the burst:
  // 600 new Stages cost no frame more than ~BUDGET plus one layout.
  const queue = new Map(); // stage name -> Stage or null, not yet shown
  let working = false;
  let topo = false; // membership or edges changed: lay out again when done
  const yieldPort = new MessageChannel();
  yieldPort.port1.onmessage = work;
  const BUDGET = 8; // ms per slice

  function apply(changes) {
    for (const [name, s] of changes) queue.set(name, s);
    if (!working) {
      working = true;
      work();
    }
  }

  function work() {
    const end = performance.now() + BUDGET;
    const now = Date.now();
    for (const [name, s] of queue) {
      queue.delete(name);
      change(name, s, now);
      if (performance.now() > end) break;
    }
    if (queue.size) {
      // A message, not a timer: not throttled in a background tab.
      yieldPort.port2.postMessage(0);
      return;
    }
    working = false;
    if (topo) {
      topo = false;
      relayout();
    }
    updateHead();
  }

  function change(name, s, now) {
    let node = nodes.get(name);
    if (s === null) {
      if (node) {
        node.el.remove();
        if (node.phase) count(node.phase, -1);
        nodes.delete(name);
        topo = true;
      }
      return;
    }
    if (!node) {
      node = makeNode(name);
      nodes.set(name, node);
      topo = true;
    }
    const src = sources(s);
    if (node.key !== src.key) {
      node.key = src.key;
      node.src = src;
      topo = true;
      const parts = [];
      if (src.direct.length) parts.push(`Warehouse ${src.direct.join(', ')}`);
      if (src.up.length) parts.push(`Stage${src.up.length > 1 ? 's' : ''} ${src.up.join(', ')}`);
      node.from.textContent = parts.length ? `Freight from ${parts.join('; ')}.` : 'Requests no Freight.';
    }
    fill(node, s, now);
  }

  // relayout places every node and redraws the edges: only when a Stage
  // came, went or changed what it takes Freight from.
  function relayout() {
    const graph = new Map();
    for (const [name, n] of nodes) graph.set(name, n.src);
    const L = layout(graph);
    const wanted = new Set(L.warehouses);
    for (const [w, wn] of whs) {
      if (!wanted.has(w)) {
        wn.el.remove();
        whs.delete(w);
      }
    }
    for (const w of L.warehouses) {
      if (whs.has(w)) continue;
      const el = whTemplate.cloneNode(true);
      el.lastElementChild.textContent = w;
      el.dataset.warehouse = w;
      if (query) el.classList.add('dim');
      whs.set(w, { el, t: '' });
    }
    const els = [];
    for (const id of L.order) {
      const n = id.charCodeAt(0) === 119 /* w */ ? whs.get(id.slice(2)) : nodes.get(id.slice(2));
      const p = L.pos.get(id);
      const t = `translate(${p.x}px,${p.y}px)`;
      if (n.t !== t) {
        n.el.style.transform = t;
        n.t = t;
      }
      els.push(n.el);
    }
    // The DOM in reading order (column by column), for the keyboard and
    // screen readers. Nodes on the page already: only what is out of place
    // moves. New nodes go in over the next frames (mount).
    const placed = [];
    const fresh = [];
    const before = []; // for each new node, the placed node it goes before
    let ref = null;
    for (let k = els.length - 1; k >= 0; k--) {
      if (els[k].parentNode === list) {
        ref = els[k];
      } else {
        fresh.push(els[k]);
        before.push(ref);
      }
    }
    for (const el of els) if (el.parentNode === list) placed.push(el);
    let i = 0;
    for (let c = list.firstElementChild; c && i < placed.length && c === placed[i]; c = c.nextElementSibling) i++;
    if (i < placed.length) list.append(...placed.slice(i));
    fresh.reverse();
    before.reverse();

    canvas.style.width = L.width + 'px';
    canvas.style.height = L.height + 'px';
    svg.setAttribute('width', String(L.width));
    svg.setAttribute('height', String(L.height));

    // Edges: a path per edge, kept by its ends; only those that appear,
    // go or move change. New ones go in after the new nodes.
    const seen = new Set();
    const newEdges = document.createDocumentFragment();
    // Edges made by a layout whose nodes were still going in.
    if (mountQueue) newEdges.append(mountQueue.edges);
    for (const [a, b] of L.edges) {
      const key = a + '>' + b;
      seen.add(key);
      const d = edgePath(L.pos.get(a), L.pos.get(b));
      let e = edges.get(key);
      if (!e) {
        const el = document.createElementNS(SVG_NS, 'path');
        el.setAttribute('class', a.charCodeAt(0) === 119 ? 'e-wh' : 'e-st');
        el.setAttribute('data-from', a);
        el.setAttribute('data-to', b);
        edges.set(key, (e = { el, d: '' }));
        newEdges.append(el);
      }
      if (e.d !== d) {
        e.el.setAttribute('d', d);
        e.d = d;
      }
    }
    for (const [key, e] of edges) {
      if (!seen.has(key)) {
        e.el.remove();
        edges.delete(key);
      }
    }
    nEdges = L.edges.length;

    mountQueue = { fresh, before, next: 0, edges: newEdges };
    mount();
    setText(countEl, `${nodes.size} stage${nodes.size === 1 ? '' : 's'} · ${whs.size} warehouse${whs.size === 1 ? '' : 's'}`);
  }

  // mount puts new nodes on the page, MOUNT a frame, then new edges in a
  // frame of their own: style and layout of 600 new nodes and their edges
  // in one frame would hold it for a few hundred ms on a slow machine. A
  // hidden tab, which renders no frames, takes them all at once.
  const MOUNT = 80;
  let mountQueue = null;
  let mountFrame = 0;
  let mountTimer = 0;
  function mount() {
    cancelAnimationFrame(mountFrame);
    clearTimeout(mountTimer);
    mountFrame = 0;
    const q = mountQueue;
    if (!q) return;
    // All at once: in a hidden tab (no frames to spread them over), when
    // asked (the tab came back), and when there are few.
    const all = document.hidden || q.all || q.fresh.length - q.next <= MOUNT / 2;
    if (q.next < q.fresh.length) {
      const end = all ? q.fresh.length : Math.min(q.fresh.length, q.next + MOUNT);
      for (; q.next < end; q.next++) {
        const el = q.fresh[q.next];
        if (el.parentNode === list) continue;
        const ref = q.before[q.next];
        list.insertBefore(el, ref && ref.parentNode === list ? ref : null);
      }
      if (!all && (q.next < q.fresh.length || q.edges.firstChild)) {
        // The timer: where frames do not run (a page just thawed, or in
        // the background), the rest still goes in.
        mountFrame = requestAnimationFrame(mount);
        mountTimer = setTimeout(mount, 100);
        return;
      }
    }
    svg.append(q.edges);
    mountQueue = null;
    setAttr(canvas, 'data-edges', String(nEdges));
  }
  function mountAll() {
    if (!mountQueue) return;
    mountQueue.all = true;
    mount();
  }
  // A tab hidden while nodes go in takes the rest at once.
  document.addEventListener('visibilitychange', () => { if (document.hidden) mountAll(); });

  let countsKey = '';
  let synced = false;
  function updateHead() {
    loading.hidden = synced;
    const key = STAGE_PHASES.map((p) => counts.get(p) || 0).join(',');
    if (key !== countsKey) {
      countsKey = key;
      chips.replaceChildren(...STAGE_PHASES.filter((p) => counts.get(p)).map((p) =>
        h('li', { class: 'chip sp-' + p, dataset: { phase: p } }, h('span', { class: 'dot', 'aria-hidden': 'true' }), `${counts.get(p)} ${p.toLowerCase()}`)));
    }
    empty.hidden = nodes.size > 0 || !loading.hidden;
    scroller.hidden = nodes.size === 0;
    if (query) showMatches();
  }

  // Find: Stages whose name has the text stay bright, the rest dim; Enter
  // goes to the first.
  function showMatches() {
    let n = 0;
    let first = null;
    for (const node of nodes.values()) {
      const hit = !query || node.name.includes(query);
      node.el.classList.toggle('dim', !hit);
      if (hit) {
        n++;
        if (!first || node.name < first.name) first = node;
      }
    }
    for (const wn of whs.values()) wn.el.classList.toggle('dim', !!query);
    setText(filterStatus, query ? `${n} match${n === 1 ? '' : 'es'}` : '');
    return first;
  }
  filter.addEventListener('input', () => {
    query = filter.value.trim().toLowerCase();
    showMatches();
  });
  filter.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    ev.preventDefault();
    const first = query ? showMatches() : null;
    if (first) {
      first.el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      first.el.querySelector('a').focus({ preventScroll: true });
    }
  });

  const live = new LiveCollection({
    url: stageStreams.list(project),
    event: 'stage',
    key: (s) => s.metadata.name,
    deleted: (s) => s.deleted === true,
    apply,
    onSynced: () => {
      synced = true;
      if (!working) updateHead();
    },
    onState: ui.setConn,
  });
  live.start();

  // "5m ago" moves on; and a page that comes back is made current.
  const tick = () => {
    const now = Date.now();
    for (const node of nodes.values()) if (node.promoAt) promoText(node, now);
  };
  setInterval(tick, 15000);
  keepCurrent(live, () => {
    tick();
    mountAll();
  });
}

