// @ts-check
// Scope is what a page holds while it is shown: its streams, timers,
// listeners on the document or window, and anything else that must end
// with it. The router gives each page a scope and closes it when the page
// goes (a navigation, or back and forward), so that nothing of a page
// runs on after it: no stream stays open, no timer ticks.

export class Scope {
  constructor() {
    /** @type {(() => void)[]} */
    this.cleanups = [];
    this.closed = false;
  }

  /** add registers fn to run when the page goes; after that, at once.
   * @param {() => void} fn */
  add(fn) {
    if (this.closed) fn();
    else this.cleanups.push(fn);
  }

  /** interval is setInterval, cleared with the page.
   * @param {() => void} fn @param {number} ms */
  interval(fn, ms) {
    if (this.closed) return;
    const id = setInterval(fn, ms);
    this.add(() => clearInterval(id));
  }

  /**
   * listen is addEventListener on something that outlives the page
   * (document, window), removed with the page.
   * @param {EventTarget} target @param {string} type @param {(ev: any) => void} fn
   */
  listen(target, type, fn) {
    if (this.closed) return;
    target.addEventListener(type, fn);
    this.add(() => target.removeEventListener(type, fn));
  }

  /** close ends everything the page holds, the last registered first. */
  close() {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.cleanups.reverse()) {
      try {
        fn();
      } catch (e) {
        console.error('page teardown:', e);
      }
    }
    this.cleanups = [];
  }
}
