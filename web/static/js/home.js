// @ts-check
// "/": the projects and domains with runs, kept live by the projects
// stream; or type one in. The last choice is remembered.
import { h } from './dom.js';
import { MAX, validName } from './api.js';
import { pages, streams } from './urls.js';
import { live } from './stream.js';
import { compareNames, timeEl } from './format.js';
import * as store from './store.js';

/** @typedef {import('./ui.js').UI} UI */
/** @typedef {import('./scope.js').Scope} Scope */

// projectList is the list of projects, live: a new one appears without a
// reload, a deleted one goes.
/** @param {UI} ui @param {Scope} scope */
function projectList(ui, scope) {
  const list = h('ul', { id: 'projects' });
  const empty = h('p', { class: 'muted', id: 'projects-empty', hidden: true, text: 'No runs yet. Projects appear here with their first run.' });
  const el = h('nav', { class: 'projects', 'aria-labelledby': 'projects-title' },
    h('h2', { id: 'projects-title', text: 'Projects' }), list, empty);
  const projects = live(scope, {
    url: streams.projects(),
    event: 'project',
    key: (p) => `${p.project}/${p.domain}`,
    deleted: (p) => !!p.deleted,
    apply: () => {
      const items = [...projects.items.values()].sort((a, b) => compareNames(a.project, b.project) || compareNames(a.domain, b.domain));
      list.replaceChildren(...items.map((p) => h('li', null,
        h('a', { href: pages.runs(p.project, p.domain), 'data-project': `${p.project}/${p.domain}` },
          h('span', { class: 'pd', text: `${p.project} / ${p.domain}` }),
          h('span', { class: 'pmeta' }, `${p.runCount} run${p.runCount === 1 ? '' : 's'} · last active `, timeEl(p.lastActivity))))));
      list.hidden = items.length === 0;
      empty.hidden = items.length !== 0;
    },
    onState: ui.setConn,
  });
  projects.start();
  return el;
}

/** @param {HTMLElement} main @param {UI} ui @param {Scope} scope */
export function homePage(main, ui, scope) {
  ui.setTitle('');
  ui.setCrumbs([]);
  const last = store.last();
  /** @param {string} id @param {string} label @param {number} max @param {string | null} value @param {string} placeholder */
  const field = (id, label, max, value, placeholder) => {
    const input = h('input', {
      id, name: id, type: 'text', required: true, maxlength: max, value: value || '',
      placeholder, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false',
      pattern: '[a-z0-9]([\\-a-z0-9]*[a-z0-9])?', 'aria-describedby': 'pick-hint',
    });
    return { input, el: h('div', { class: 'field' }, h('label', { for: id, text: label }), input) };
  };
  const project = field('project', 'Project', MAX.project, last && last.project, 'flytesnacks');
  const domain = field('domain', 'Domain', MAX.domain, last && last.domain, 'development');
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const form = h('form', { class: 'pick', novalidate: true },
    h('div', { class: 'fields' }, project.el, domain.el,
      h('button', { type: 'submit', class: 'btn primary', text: 'Go' })),
    h('p', { id: 'pick-hint', class: 'hint', text: 'Lower-case letters, digits and “-”, as in the API.' }),
    error);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = project.input.value.trim();
    const d = domain.input.value.trim();
    const bad = !validName(p, MAX.project) ? project.input : !validName(d, MAX.domain) ? domain.input : null;
    project.input.setAttribute('aria-invalid', String(bad === project.input));
    domain.input.setAttribute('aria-invalid', String(bad === domain.input));
    if (bad) {
      error.textContent = `Enter a valid ${bad.id}: lower-case letters, digits and “-”, starting and ending with a letter or digit.`;
      error.hidden = false;
      bad.focus();
      return;
    }
    store.remember(p, d);
    ui.navigate(pages.runs(p, d));
  });

  // A project's Kargo Stages: a project is all they need.
  const stagesProject = field('stages-project', 'Kargo project', MAX.project, last && last.project, 'kargo-demo');
  const stagesError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const stagesForm = h('form', { class: 'pick stages-pick', novalidate: true, 'aria-labelledby': 'stages-title' },
    h('h2', { id: 'stages-title', text: 'Kargo stages' }),
    h('p', { class: 'muted', text: 'See a project’s Stages as a pipeline, with their phase, health and Freight, live.' }),
    h('div', { class: 'fields stages-fields' }, stagesProject.el,
      h('button', { type: 'submit', class: 'btn', text: 'Open stages' })),
    stagesError);
  stagesForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = stagesProject.input.value.trim();
    const ok = validName(p, MAX.project);
    stagesProject.input.setAttribute('aria-invalid', String(!ok));
    if (!ok) {
      stagesError.textContent = 'Enter a valid project: lower-case letters, digits and “-”, starting and ending with a letter or digit.';
      stagesError.hidden = false;
      stagesProject.input.focus();
      return;
    }
    ui.navigate(pages.stages(p));
  });

  const recent = store.recent();
  main.append(
    h('section', { class: 'panel narrow home' },
      h('h1', { text: 'Open a project' }),
      h('p', { class: 'muted', text: 'See the runs of a project and domain as they happen, and follow each run’s actions live.' }),
      projectList(ui, scope),
      form,
      recent.length ? h('nav', { class: 'recent', 'aria-labelledby': 'recent-title' },
        h('h2', { id: 'recent-title', text: 'Recent' }),
        h('ul', null, recent.map((x) => h('li', null, h('a', { href: pages.runs(x.project, x.domain), text: `${x.project} / ${x.domain}` }))))) : null,
      stagesForm));
  project.input.focus();
}
