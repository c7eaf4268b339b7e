// The dashboard's entry: route the path to a page. The server answers every
// path that is not a file with index.html, so these URLs are the pages:
//   /                                    pick a project and domain
//   /projects/{p}/domains/{d}            the runs, live
//   /projects/{p}/domains/{d}/runs/{r}   one run's action tree, live
//   /projects/{p}/stages                 a project's Kargo Stages as a pipeline, live
//   /projects/{p}/stages/{s}             one Stage: conditions, spec, refresh, delete,
//                                        promote, its promotions and Freight timeline
//   /projects/{p}/promotions/{name}      one Promotion: its steps, live; abort
import { h, clear } from './dom.js';
import { MAX, pages, validName, session, logout } from './api.js';
import { loginPage } from './login.js';
import { homePage } from './home.js';
import { runsPage } from './runs.js';
import { runPage } from './run.js';
import { stagesPage } from './stages.js';
import { validProject, validStageName } from './kargo.js';
import { stagePage } from './stage.js';
import { promotionPage } from './promote.js';

const main = document.getElementById('main');
const crumbs = document.getElementById('crumbs');
const conn = document.getElementById('conn');

const CONN = {
  connecting: ['connecting…', 'Connecting to the server'],
  syncing: ['syncing…', 'Receiving the current state'],
  live: ['live', 'Connected: changes appear as they happen'],
  reconnecting: ['reconnecting…', 'The connection dropped; reconnecting and catching up'],
};

/** ui is what pages may change outside <main>. */
const ui = {
  /** setConn shows the stream state in the header. */
  setConn(state) {
    const [text, title] = CONN[state] || [state, ''];
    conn.hidden = false;
    conn.dataset.conn = state;
    conn.title = title;
    conn.lastElementChild.textContent = text;
  },
  /** setCrumbs sets the breadcrumb trail: [{label, href?}]; the last is this page. */
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
};

function notFound(message) {
  ui.setTitle('Not found');
  ui.setCrumbs([]);
  main.append(
    h('section', { class: 'panel narrow notice' },
      h('h1', { text: 'Nothing here' }),
      h('p', { text: message }),
      h('p', null, h('a', { href: pages.home(), text: 'Pick a project and domain' }))));
}

function route() {
  let parts;
  try {
    parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = null;
  }
  if (!parts) return notFound('This address is not valid.');
  if (parts.length === 0) return homePage(main, ui);
  if (parts[0] === 'projects' && parts[2] === 'promotions' && parts.length === 4) {
    const [project, name] = [parts[1], parts[3]];
    if (!validProject(project)) {
      return notFound(`“${project}” is not a valid project name: use lower-case letters, digits and “-” (starting and ending with a letter or digit), at most ${MAX.project} characters.`);
    }
    if (!validStageName(name)) {
      return notFound(`“${name}” is not a valid promotion name: use lower-case letters, digits, “-” and “.”, at most 253 characters.`);
    }
    return promotionPage(main, { project, name }, ui);
  }
  if (parts[0] === 'projects' && parts[2] === 'stages' && (parts.length === 3 || parts.length === 4)) {
    const [project, stage] = [parts[1], parts[3]];
    if (!validProject(project)) {
      return notFound(`“${project}” is not a valid project name: use lower-case letters, digits and “-” (starting and ending with a letter or digit), at most ${MAX.project} characters.`);
    }
    if (stage === undefined) return stagesPage(main, { project }, ui);
    if (!validStageName(stage)) {
      return notFound(`“${stage}” is not a valid stage name: use lower-case letters, digits, “-” and “.”, at most 253 characters.`);
    }
    return stagePage(main, { project, stage }, ui);
  }
  if (parts[0] !== 'projects' || parts[2] !== 'domains' || (parts.length !== 4 && !(parts.length === 6 && parts[4] === 'runs'))) {
    return notFound(`There is no page at ${location.pathname}.`);
  }
  const [project, domain, run] = [parts[1], parts[3], parts[5]];
  const bad = [['project', project], ['domain', domain], ...(run === undefined ? [] : [['run', run]])]
    .find(([kind, v]) => !validName(v, MAX[kind]));
  if (bad) {
    return notFound(`“${bad[1]}” is not a valid ${bad[0]} name: use lower-case letters, digits and “-” (starting and ending with a letter or digit), at most ${MAX[bad[0]]} characters.`);
  }
  if (run === undefined) return runsPage(main, { project, domain }, ui);
  return runPage(main, { project, domain, run }, ui);
}

/** showUser puts who is logged in, and a way out, in the header. */
function showUser(me) {
  if (me.subject === 'anonymous') return; // authentication is off
  const out = h('button', { type: 'button', class: 'btn small', id: 'logout', text: 'Log out' });
  out.addEventListener('click', async () => {
    try { await logout(); } finally { location.assign('/'); }
  });
  document.getElementById('user').append(h('span', { class: 'muted', text: me.subject }), out);
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
  route();
}

start();
