// @ts-check
// Kargo's Freight as the pages show it: a piece of
// Freight in a few words (alias, short name, artifacts), the project's
// Freight by name (Stage histories and Promotions name Freight but carry no
// alias), and a Stage's Freight timeline.
import { h } from './dom.js';
import { listFreight } from './api.js';
import { fullTime } from './format.js';
import { relTime } from './kargo.js';

/** short is a Freight name as Kargo's UI shortens it (7 characters). */
export function short(name) {
  return (name || '').slice(0, 7);
}

/** originText: "Warehouse w". */
export function originText(o) {
  return o && o.name ? `${o.kind || 'Warehouse'} ${o.name}` : '';
}

/** artifacts are a piece of Freight's (or a FreightReference's) artifacts,
 * each as [kind, text]. */
export function artifacts(f) {
  const out = [];
  for (const i of (f && f.images) || []) {
    const v = i.tag || (i.digest ? i.digest.replace(/^(sha256:)?(.{12}).*$/, '$1$2') : '');
    out.push(['image', `${i.repoURL || '?'}${v ? (i.tag ? ':' : '@') + v : ''}`]);
  }
  for (const c of (f && f.commits) || []) {
    const v = c.tag || (c.id ? c.id.slice(0, 7) : '') || c.branch || '';
    out.push(['commit', `${c.repoURL || '?'}${v ? '@' + v : ''}`]);
  }
  for (const c of (f && f.charts) || []) {
    const n = c.name ? `${c.repoURL ? c.repoURL.replace(/\/+$/, '') + '/' : ''}${c.name}` : c.repoURL || '?';
    out.push(['chart', `${n}${c.version ? ':' + c.version : ''}`]);
  }
  return out;
}

/** artifactText is the artifacts in one line. */
export function artifactText(f) {
  const a = artifacts(f);
  return a.length ? a.map(([, t]) => t).join(', ') : 'no artifacts';
}

/** artifactList is the artifacts as a list, each with its kind. */
export function artifactList(f) {
  const a = artifacts(f);
  if (!a.length) return h('p', { class: 'muted small', text: 'No artifacts' });
  return h('ul', { class: 'artifacts' }, a.map(([kind, text]) => h('li', null,
    h('span', { class: 'art-kind', text: kind }), h('code', { class: 'wrap', text: text }))));
}

/** freightLabel is how a piece of Freight is named: its alias, else its
 * short name. */
export function freightLabel(name, alias) {
  return alias || short(name) || '?';
}

/**
 * FreightIndex keeps the project's Freight by name, for the aliases:
 * read once, and again (at most every 2 s) when asked about a name it
 * does not know, as new Freight appears.
 */
export class FreightIndex {
  /** @param {string} project @param {(() => void) | null} onChange */
  constructor(project, onChange) {
    this.project = project;
    this.onChange = onChange;
    this.byName = new Map();
    this.version = 0;
    this.loading = null;
    this.last = 0;
    this.timer = 0;
    this.missing = new Set();
  }

  load() {
    if (this.loading) return this.loading;
    this.last = Date.now();
    this.loading = listFreight(this.project).then((items) => {
      this.byName = new Map(items.map((f) => [f.metadata.name, f]));
      this.version++;
      this.missing.clear();
      if (this.onChange) this.onChange();
    }, () => { /* shown without aliases; asked again on the next unknown name */ })
      .finally(() => { this.loading = null; });
    return this.loading;
  }

  /** alias is the alias of the named Freight ("" while unknown). */
  alias(name) {
    if (!name) return '';
    const f = this.byName.get(name);
    if (f) return f.alias || '';
    this.want(name);
    return '';
  }

  /** stop cancels a read to come (the page goes). */
  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.onChange = null;
  }

  /** @param {string} name */
  get(name) {
    return this.byName.get(name);
  }

  want(name) {
    if (this.missing.has(name)) return;
    this.missing.add(name);
    if (this.timer || this.loading) return;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.load();
    }, Math.max(0, 2000 - (Date.now() - this.last)));
  }
}

/** collections are a Stage's freightHistory, newest (current) first. */
function collections(s) {
  return (s && s.status && Array.isArray(s.status.freightHistory) ? s.status.freightHistory : []).filter(Boolean);
}

/** freightTimeline draws a Stage's Freight history, the current first. */
export function freightTimeline(s, index, now = Date.now()) {
  const hist = collections(s);
  if (!hist.length) {
    return h('p', { class: 'empty', id: 'freight-timeline-empty', text: 'No Freight has been promoted to this stage yet.' });
  }
  return h('ol', { class: 'freight-timeline', id: 'freight-timeline' }, hist.map((c, i) => {
    const items = Object.entries(c.items || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, f]) => f).filter((f) => f && f.name);
    const v = (c.verificationHistory || [])[0];
    const current = i === 0;
    return h('li', { class: current ? 'current' : null, dataset: { freightCollection: c.id || String(i), current: String(current) } },
      h('span', { class: 'marker', 'aria-hidden': 'true' }),
      h('div', { class: 'fc-body' },
        h('div', { class: 'fc-head' },
          h('span', { class: current ? 'tag fc-current' : 'tag fc-past', text: current ? 'Current' : `${i} back` }),
          v && v.phase ? h('span', { class: 'muted small', text: `verification ${v.phase}` }) : null),
        items.map((f) => {
          const full = index ? index.get(f.name) : null;
          const alias = full ? full.alias || '' : index ? index.alias(f.name) : '';
          return h('div', { class: 'fc-item', dataset: { freight: f.name } },
            h('div', { class: 'fc-line' },
              h('strong', { class: 'fc-alias', text: freightLabel(f.name, alias) }),
              h('code', { class: 'muted', title: f.name, text: short(f.name) }),
              f.origin ? h('span', { class: 'muted small', text: `from ${originText(f.origin)}` }) : null,
              full && full.metadata && full.metadata.creationTimestamp
                ? h('time', { class: 'muted small', datetime: full.metadata.creationTimestamp, title: fullTime(full.metadata.creationTimestamp), text: `made ${relTime(full.metadata.creationTimestamp, now)}` })
                : null),
            artifactList(f));
        })));
  }));
}
