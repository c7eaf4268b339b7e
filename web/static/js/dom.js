// @ts-check
// Small DOM helpers: build elements, and change them only when a value
// really changes (so a live update touches as little of the page as it can).

/** @typedef {Node | string | number | null | undefined | false | any[]} Child */

/**
 * h builds an element. attrs: class, text, dataset, on<event> handlers,
 * and plain attributes (false and null are left out, true is "").
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {Child[]} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

/** @param {HTMLElement} el @param {Child[]} children */
function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

/** setText sets the text of el if it differs. @param {Node} el @param {string} text */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/** setAttr sets (or, for null, removes) an attribute if it differs.
 * @param {Element} el @param {string} name @param {string | null | undefined} value */
export function setAttr(el, name, value) {
  if (value == null) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
  } else if (el.getAttribute(name) !== value) {
    el.setAttribute(name, value);
  }
}

/** clear removes every child of el. @param {Element} el */
export function clear(el) {
  el.replaceChildren();
}

/** srOnly is text for screen readers only. @param {string} text */
export function srOnly(text) {
  return h('span', { class: 'sr-only', text });
}
