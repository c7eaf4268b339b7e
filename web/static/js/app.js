// @ts-check
// The dashboard's entry: route the path to a page. The server answers every
// path that is not a file with index.html, so these URLs are the pages:
//   /                                    pick a project and domain
//   /projects/{p}/domains/{d}            the runs, live
//   /projects/{p}/domains/{d}/runs/{r}   one run's action tree, live
//   /projects/{p}/stages                 a project's Kargo Stages as a pipeline, live
//   /projects/{p}/stages/{s}             one Stage: conditions, spec, refresh, delete,
//                                        promote, its promotions and Freight timeline
//   /projects/{p}/promotions/{name}      one Promotion: its steps, live; abort
//
// A link between pages is followed here, without loading the page again:
// the page shown is torn down (its scope closed: streams, timers,
// listeners), <main> emptied, and the next one drawn. Back and forward do
// the same.
import { h, clear } from './dom.js';
import { MAX, validName, session, logout } from './api.js';
import { pages } from './urls.js';
import { validProject, validStageName } from './kargo.js';
import { Scope } from './scope.js';
import { loginPage } from './login.js';
import { homePage } from './home.js';
import { runsPage } from './runs.js';
import { runPage } from './run.js';
import { stagesPage } from './stages.js';
import { stagePage } from './stage.js';
import { promotionPage } from './promotion.js';

/** @typedef {import('./ui.js').UI} UI */

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const crumbs = /** @type {HTMLElement} */ (document.getElementById('crumbs'));
const conn = /** @type {HTMLElement} */ (document.getElementById('conn'));

/** @type {Record<string, [string, string]>} */
const CONN = {
  connecting: ['connecting…', 'Connecting to the server'],
  syncing: ['syncing…', 'Receiving the current state'],
  live: ['live', 'Connected: changes appear as they happen'],
  reconnecting: ['reconnecting…', 'The connection dropped; reconnecting and catching up'],
};

/** ui is what pages may change outside <main>. @type {UI} */
const ui = {
  setConn(state) {
    const [text, title] = CONN[state] || [state, ''];
    conn.hidden = false;
    conn.dataset.conn = state;
    conn.title = title;
    /** @type {Element} */ (conn.lastElementChild).textContent = text;
  },
  setCrumbs(items) {
    clear(crumbs);
    const ol = h('ol');
    items.forEach((it, i) => {
      const here = i === items.length - 1;
      ol.append(h('li', null, here || !it.href ? h('span', { 'aria-current': here ? 'page' : null, text: it.label }) : h('a', { href: it.href, text: it.label })));
    });
    crumbs.append(ol);
  },
  setTitle(t) {
    document.title = t ? `${t} · taskactions` : 'taskactions';
  },
  navigate,
};

/** @param {string} message */
function notFound(message) {
  ui.setTitle('Not found');
  ui.setCrumbs([]);
  main.append(
    h('section', { class: 'panel narrow notice' },
      h('h1', { text: 'Nothing here' }),
      h('p', { text: message }),
      h('p', null, h('a', { href: pages.home(), text: 'Pick a project and domain' }))));
}

/** @param {string} kind @param {string} v @param {string} rule */
const invalid = (kind, v, rule) => notFound(`“${v}” is not a valid ${kind} name: ${rule}.`);
const LABEL = `use lower-case letters, digits and “-” (starting and ending with a letter or digit), at most ${MAX.project} characters`;
const SUBDOMAIN = 'use lower-case letters, digits, “-” and “.”, at most 253 characters';

/** route draws the page of the address. @param {Scope} scope */
function route(scope) {
  let parts;
  try {
    parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = null;
  }
  if (!parts) return notFound('This address is not valid.');
  if (parts.length === 0) return homePage(main, ui, scope);
  if (parts[0] === 'projects' && parts[2] === 'promotions' && parts.length === 4) {
    const [project, name] = [parts[1], parts[3]];
    if (!validProject(project)) return invalid('project', project, LABEL);
    if (!validStageName(name)) return invalid('promotion', name, SUBDOMAIN);
    return promotionPage(main, { project, name }, ui, scope);
  }
  if (parts[0] === 'projects' && parts[2] === 'stages' && (parts.length === 3 || parts.length === 4)) {
    const [project, stage] = [parts[1], parts[3]];
    if (!validProject(project)) return invalid('project', project, LABEL);
    if (stage === undefined) return stagesPage(main, { project }, ui, scope);
    if (!validStageName(stage)) return invalid('stage', stage, SUBDOMAIN);
    return stagePage(main, { project, stage }, ui, scope);
  }
  if (parts[0] !== 'projects' || parts[2] !== 'domains' || (parts.length !== 4 && !(parts.length === 6 && parts[4] === 'runs'))) {
    return notFound(`There is no page at ${location.pathname}.`);
  }
  const [project, domain, run] = [parts[1], parts[3], parts[5]];
  /** @type {[keyof MAX, string][]} */
  const names = [['project', project], ['domain', domain]];
  if (run !== undefined) names.push(['run', run]);
  const bad = names.find(([kind, v]) => !validName(v, MAX[kind]));
  if (bad) {
    return notFound(`“${bad[1]}” is not a valid ${bad[0]} name: use lower-case letters, digits and “-” (starting and ending with a letter or digit), at most ${MAX[bad[0]]} characters.`);
  }
  if (run === undefined) return runsPage(main, { project, domain }, ui, scope);
  return runPage(main, { project, domain, run }, ui, scope);
}

// The page shown, and the path it was drawn for.
let scope = new Scope();
let shownPath = '';

/** show tears the page down and draws the one of the address; after a
 * navigation (not the first page), the keyboard starts from <main>
 * unless the page put it somewhere. */
function show() {
  const first = shownPath === '';
  scope.close();
  scope = new Scope();
  shownPath = location.pathname;
  for (const d of document.querySelectorAll('dialog[open]')) /** @type {HTMLDialogElement} */ (d).close('navigate');
  clear(main);
  main.className = '';
  conn.hidden = true;
  delete conn.dataset.conn;
  window.scrollTo(0, 0);
  route(scope);
  if (!first && (!document.activeElement || document.activeElement === document.body)) main.focus({ preventScroll: true });
}

/**
 * navigate goes to a page of the dashboard without loading it again.
 * @param {string} to a path (with query and hash)
 * @param {{replace?: boolean}} [o]
 */
function navigate(to, o = {}) {
  if (o.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  if (location.pathname !== shownPath) show();
  else window.dispatchEvent(new HashChangeEvent('hashchange'));
}

// followLinks: a plain click on a link to another page of the dashboard
// is a navigation here. Links with a modifier, a target, a download, to
// the API or elsewhere are the browser's.
/** @param {MouseEvent} ev */
function followLink(ev) {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
  if (!(a instanceof HTMLAnchorElement) || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || !main.isConnected) return;
  if (url.pathname === location.pathname && url.search === location.search) return; // the hash: the browser's
  ev.preventDefault();
  navigate(url.pathname + url.search + url.hash);
}

/** showUser puts who is logged in, and a way out, in the header.
 * @param {{subject: string}} me */
function showUser(me) {
  if (me.subject === 'anonymous') return; // authentication is off
  const out = h('button', { type: 'button', class: 'btn small', id: 'logout', text: 'Log out' });
  out.addEventListener('click', async () => {
    try { await logout(); } finally { location.assign('/'); }
  });
  /** @type {HTMLElement} */ (document.getElementById('user')).append(h('span', { class: 'muted', text: me.subject }), out);
}

// Every page but the login needs a session; without one (or when it has
// expired), the login page takes the place of the page asked for.
async function start() {
  conn.append(h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span'));
  try {
    showUser(await session());
  } catch (e) {
    if (e.status === 401) {
      return loginPage(main, ui, { expired: new URLSearchParams(location.search).get('login') === 'expired' });
    }
    // Unreachable or starting: the page says so and its streams retry.
  }
  document.addEventListener('click', followLink);
  window.addEventListener('popstate', () => { if (location.pathname !== shownPath) show(); });
  show();
}

start();
