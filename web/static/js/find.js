// @ts-check
// "Find in run": a search box over the run's actions, by part of the name
// and by phase. It works on the tree's model, not on the DOM: with the
// tree virtualized, most rows are not in the page to be found by the
// browser's own find. Enter (or Next) jumps to the next match and selects
// it, opening its ancestors; Shift+Enter (or Previous) goes back. The
// query is kept in the URL (?q=&phase=), as on the runs page.
import { h, setText } from './dom.js';
import { PHASES, phaseName } from './format.js';

/** @typedef {import('./tree.js').ActionTree} ActionTree */
/** @typedef {import('./tree.js').TreeNode} TreeNode */

export class RunFind {
  /** @param {ActionTree} tree */
  constructor(tree) {
    this.tree = tree;
    const params = new URLSearchParams(location.search);
    this.query = h('input', { type: 'search', id: 'find-q', placeholder: 'Find actions by name…', value: params.get('q') || '', autocomplete: 'off', 'aria-describedby': 'find-count' });
    this.phase = h('select', { id: 'find-phase' },
      h('option', { value: '', text: 'Any phase' }),
      PHASES.filter((p) => p !== 'UNSPECIFIED').map((p) => h('option', { value: p, text: phaseName(p) })));
    this.phase.value = PHASES.includes(params.get('phase') || '') ? params.get('phase') || '' : '';
    this.count = h('span', { class: 'muted', id: 'find-count', 'aria-live': 'polite' });
    const prev = h('button', { type: 'button', class: 'btn small', id: 'find-prev', 'aria-label': 'Previous match', text: '↑', onclick: () => this.jump(-1) });
    const next = h('button', { type: 'button', class: 'btn small', id: 'find-next', 'aria-label': 'Next match', text: '↓', onclick: () => this.jump(1) });
    this.el = h('form', { class: 'filters find', role: 'search', 'aria-label': 'Find in run', onsubmit: (ev) => ev.preventDefault() },
      h('label', { for: 'find-q', class: 'sr-only', text: 'Find actions whose name contains' }), this.query,
      h('label', { for: 'find-phase', class: 'sr-only', text: 'Phase' }), this.phase, prev, next, this.count);
    /** @type {TreeNode[]} the matches, in the tree's order */
    this.matches = [];
    /** @type {Set<TreeNode>} */
    this.matchSet = new Set();
    this.cursor = -1; // the match last jumped to
    tree.marked = (node) => this.matchSet.has(node);
    this.query.addEventListener('input', () => this.changed(true));
    this.phase.addEventListener('change', () => this.changed(true));
    this.query.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.jump(ev.shiftKey ? -1 : 1);
      } else if (ev.key === 'Escape' && this.query.value) {
        ev.preventDefault();
        this.query.value = '';
        this.changed(true);
      }
    });
  }

  active() {
    return this.query.value.trim() !== '' || this.phase.value !== '';
  }

  /** changed works the matches out again: after an edit of the query
   * (edited: the URL follows), or after the run changed. */
  changed(edited = false) {
    if (edited) {
      const next = new URLSearchParams(location.search);
      const q = this.query.value.trim();
      if (q) next.set('q', q);
      else next.delete('q');
      if (this.phase.value) next.set('phase', this.phase.value);
      else next.delete('phase');
      const qs = next.toString();
      history.replaceState(null, '', location.pathname + (qs ? '?' + qs : '') + location.hash);
    }
    const had = this.matchSet.size > 0;
    const current = this.matches[this.cursor];
    if (!this.active()) {
      this.matches = [];
    } else {
      const q = this.query.value.trim().toLowerCase();
      const phase = this.phase.value;
      this.matches = this.tree.inOrder().filter((n) => (!q || n.name.toLowerCase().includes(q)) && (!phase || n.a.phase === phase));
    }
    this.matchSet = new Set(this.matches);
    this.cursor = current ? this.matches.indexOf(current) : -1;
    this.show();
    if (had || this.matchSet.size) this.tree.refresh();
  }

  show() {
    const n = this.matches.length;
    let text = '';
    if (this.active()) {
      if (n === 0) text = 'No match';
      else if (this.cursor >= 0) text = `${this.cursor + 1} of ${n}`;
      else text = `${n} match${n === 1 ? '' : 'es'}`;
    }
    setText(this.count, text);
  }

  /** jump selects the next (1) or previous (-1) match, from the one last
   * jumped to, or else from the selected action. @param {number} d */
  jump(d) {
    const n = this.matches.length;
    if (!n) return;
    // An action picked since (a click, the keyboard): go on from there.
    if (this.cursor >= 0 && this.matches[this.cursor].name !== this.tree.selected) this.cursor = -1;
    if (this.cursor >= 0) {
      this.cursor = ((this.cursor + d) % n + n) % n;
    } else {
      // From the selection: the first match after it in the tree's order
      // (or the last before it, going back), wrapping around.
      const order = this.tree.inOrder();
      const pos = new Map(order.map((x, i) => [x, i]));
      const sel = this.tree.selected ? pos.get(this.tree.nodes.get(this.tree.selected)) ?? -1 : -1;
      const at = (m) => pos.get(m) ?? 0;
      if (d > 0) {
        const k = this.matches.findIndex((m) => at(m) > sel);
        this.cursor = k < 0 ? 0 : k;
      } else {
        let k = -1;
        for (let j = 0; j < n; j++) if (sel < 0 || at(this.matches[j]) < sel) k = j;
        this.cursor = k < 0 ? n - 1 : k;
      }
    }
    const node = this.matches[this.cursor];
    this.tree.select(node.name, { reveal: true, block: 'center' });
    this.show();
  }
}
