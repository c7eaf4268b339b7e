// @ts-check
// VirtualList: a long list of fixed-height rows of which only those in
// view (plus a margin) are in the DOM. The page scrolls as a whole (the
// list has no scroll box of its own), so the window is worked out from
// where the list sits in the viewport.
//
// The list knows rows by key; its owner says how many there are, which key
// sits at an index, how to make a row element and how to fill one. A row
// that stays in the window keeps its element, and filling is expected to
// touch only what changed, so an update to one row mutates one row.
import { cancelFrame, onFrame } from './frame.js';

/**
 * @typedef {object} VirtualListOptions
 * @property {() => number} count how many rows the list has
 * @property {(i: number) => string} keyAt the key of the row at index i
 * @property {(key: string) => number} indexOf the index of a key, -1 when not in the list
 * @property {() => HTMLElement} make a new, empty row element
 * @property {(el: HTMLElement, key: string, i: number) => void} fill writes row i into el
 * @property {number} [margin] rows rendered beyond each edge of the viewport
 */

export class VirtualList {
  /** @param {HTMLElement} root @param {VirtualListOptions} o */
  constructor(root, o) {
    this.root = root;
    this.o = o;
    this.margin = o.margin ?? 12;
    // The spacer is as tall as every row together, so that the page's
    // scroll bar is the whole list's; rows sit in it at index * height.
    this.spacer = document.createElement('div');
    this.spacer.className = 'vlist';
    this.spacer.setAttribute('role', 'none');
    root.append(this.spacer);
    /** @type {Map<string, {el: HTMLElement, i: number}>} */
    this.rendered = new Map();
    /** @type {HTMLElement[]} elements of rows that left, kept for reuse */
    this.pool = [];
    /** @type {Set<string>} keys rendered wherever they are (the focused row: focus must not fall out of the DOM) */
    this.pinned = new Set();
    this.height = 0; // one row's, read from the CSS (--row-h) as the layout can change it
    this.paint = () => this.render();
    this.closed = false;
    this.painted = false;
    this.onScroll = () => this.update();
    this.onResize = () => { this.height = 0; this.update(); };
    window.addEventListener('scroll', this.onScroll, { passive: true });
    window.addEventListener('resize', this.onResize);
  }

  close() {
    this.closed = true;
    cancelFrame(this.paint);
    window.removeEventListener('scroll', this.onScroll);
    window.removeEventListener('resize', this.onResize);
  }

  /** rowHeight is one row's height in px. */
  rowHeight() {
    if (!this.height) {
      this.height = parseFloat(getComputedStyle(this.root).getPropertyValue('--row-h')) || 36;
    }
    return this.height;
  }

  /** update renders at the next frame (in this one when called from a
   * frame's work, as the stream's flush is); any number of calls before
   * it render once. */
  update() {
    if (!this.closed) onFrame(this.paint);
  }

  /** range is the indices [first, end) in view, with the margin. */
  range() {
    const h = this.rowHeight();
    const n = this.o.count();
    const top = -this.spacer.getBoundingClientRect().top;
    const first = Math.max(0, Math.floor(top / h) - this.margin);
    const end = Math.min(n, Math.ceil((top + window.innerHeight) / h) + this.margin);
    return { first, end: Math.max(first, end) };
  }

  /** size makes the spacer as tall as the rows: before a scroll to a row,
   * which the page could not reach while it was shorter. */
  size() {
    const total = `${this.o.count() * this.rowHeight()}px`;
    if (this.spacer.style.height !== total) this.spacer.style.height = total;
  }

  /** render puts the rows of the window in the DOM, now. */
  render() {
    cancelFrame(this.paint);
    if (this.closed) return;
    const h = this.rowHeight();
    this.size();
    const { first, end } = this.range();
    /** @type {[string, number][]} */
    const want = [];
    for (let i = first; i < end; i++) want.push([this.o.keyAt(i), i]);
    for (const key of this.pinned) {
      const i = this.o.indexOf(key);
      if (i >= 0 && (i < first || i >= end)) want.push([key, i]);
    }
    want.sort((x, y) => x[1] - y[1]);
    const keep = new Set(want.map(([k]) => k));
    for (const [key, r] of this.rendered) {
      if (keep.has(key)) continue;
      this.rendered.delete(key);
      // Focus on a row that goes would fall to the body: a pinned row
      // never goes, so this is only a row that was not focused.
      r.el.remove();
      this.pool.push(r.el);
    }
    // In index order in the DOM too, as assistive technology reads it; an
    // element already in place is not moved (moving is a mutation).
    /** @type {Element | null} */
    let prev = null;
    for (const [key, i] of want) {
      let r = this.rendered.get(key);
      if (!r) {
        r = { el: this.pool.pop() || this.o.make(), i: -1 };
        this.rendered.set(key, r);
      }
      if (r.i !== i) {
        r.i = i;
        r.el.style.top = `${i * h}px`;
      }
      this.o.fill(r.el, key, i);
      const at = prev ? prev.nextElementSibling : this.spacer.firstElementChild;
      if (at !== r.el) this.spacer.insertBefore(r.el, at);
      prev = r.el;
    }
    if (!this.painted && want.length) {
      this.painted = true;
      // When the first rows went in, for DevTools and the tests.
      performance.mark('taskactions:first-rows');
    }
  }

  /** element is the row element of key, when it is rendered. */
  element(key) {
    const r = this.rendered.get(key);
    return r ? r.el : null;
  }

  /**
   * scrollTo scrolls the page so that row i is in view: just enough
   * ('nearest'), or in the middle ('center'), then renders at once so that
   * its element is there to focus.
   * @param {number} i @param {'nearest' | 'center'} [block]
   */
  scrollTo(i, block = 'nearest') {
    const h = this.rowHeight();
    this.size();
    const top = this.spacer.getBoundingClientRect().top + window.scrollY + i * h;
    const view = window.innerHeight;
    let y = window.scrollY;
    if (block === 'center') y = top - (view - h) / 2;
    else if (top < y) y = top;
    else if (top + h > y + view) y = top + h - view;
    if (Math.abs(y - window.scrollY) >= 1) window.scrollTo(window.scrollX, Math.max(0, y));
    this.render();
  }
}
