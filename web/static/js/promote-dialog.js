// @ts-check
// The Stage page's Promote dialog: which Freight to promote to the Stage
// (and approving for it Freight not available yet). One <dialog>, made on
// first use.
import { h, setAttr } from './dom.js';
import { ApiError, approveFreight, listFreight, promote } from './api.js';
import { fullTime } from './format.js';
import { toast } from './dialog.js';
import { relTime } from './kargo.js';
import { artifactText, freightLabel, originText, short } from './freight.js';

let dlg = null;

function promoteDialog() {
  if (dlg) return dlg;
  const title = h('h2', { id: 'promote-title', text: 'Promote' });
  const desc = h('p', { id: 'promote-desc' });
  const body = h('div', { class: 'promote-body' });
  const status = h('p', { class: 'muted small', id: 'promote-status', role: 'status' });
  const error = h('p', { class: 'form-error', id: 'promote-error', role: 'alert', hidden: true });
  const cancel = h('button', { type: 'button', class: 'btn', id: 'promote-cancel', text: 'Cancel' });
  const confirm = h('button', { type: 'submit', class: 'btn primary', id: 'promote-confirm', text: 'Promote' });
  const form = h('form', { method: 'dialog' }, title, desc, body, status, error, h('div', { class: 'dialog-actions' }, cancel, confirm));
  const el = h('dialog', { id: 'promote-dialog', class: 'promote-dialog', 'aria-labelledby': 'promote-title', 'aria-describedby': 'promote-desc' }, form);
  document.body.append(el);
  dlg = { el, form, title, desc, body, status, error, cancel, confirm, current: null };
  cancel.addEventListener('click', () => el.close('cancel'));
  el.addEventListener('cancel', (ev) => { if (confirm.disabled) ev.preventDefault(); });
  el.addEventListener('close', () => {
    const c = dlg.current;
    dlg.current = null;
    if (c && c.returnFocus && c.returnFocus.isConnected) c.returnFocus.focus();
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault(); // open until the server said yes
    if (dlg.current) dlg.current.submit();
  });
  return dlg;
}

/**
 * openPromote asks which Freight to promote to a Stage, and promotes it.
 * Freight of the Stage's origins that is not available yet may be approved
 * for the Stage from here.
 * @param {object} o
 * @param {string} o.project
 * @param {object} o.stage the Stage object
 * @param {(pr: object) => void} [o.done] after the Promotion was created
 */
export function openPromote(o) {
  const d = promoteDialog();
  const stage = o.stage.metadata.name;
  const nSteps = ((o.stage.spec && o.stage.spec.promotionTemplate && o.stage.spec.promotionTemplate.spec && o.stage.spec.promotionTemplate.spec.steps) || []).length;
  const origins = ((o.stage.spec && o.stage.spec.requestedFreight) || []).map((r) => r.origin || {});
  let gen = 0;
  let busy = false;

  const setBusy = (on) => {
    busy = on;
    d.confirm.disabled = on;
    d.cancel.disabled = on;
    setAttr(d.confirm, 'aria-busy', String(on));
    for (const b of d.body.querySelectorAll('button, input')) b.disabled = on;
  };
  const fail = (e) => {
    d.error.textContent = e instanceof ApiError ? e.message : `Something went wrong: ${e.message}`;
    d.error.hidden = false;
  };
  const chosen = () => {
    const r = d.body.querySelector('input[name="freight"]:checked');
    return r ? r.value : '';
  };

  async function load(select) {
    const my = ++gen;
    d.body.replaceChildren(h('p', { class: 'empty', text: 'Loading the Freight…' }));
    let avail;
    let all;
    try {
      [avail, all] = await Promise.all([listFreight(o.project, stage), listFreight(o.project)]);
    } catch (e) {
      if (my !== gen) return;
      d.body.replaceChildren();
      fail(e);
      return;
    }
    if (my !== gen) return;
    const ok = new Set(avail.map((f) => f.metadata.name));
    const requested = (f) => origins.some((og) => f.origin && f.origin.name === og.name && (f.origin.kind || 'Warehouse') === (og.kind || 'Warehouse'));
    const other = all.filter((f) => !ok.has(f.metadata.name) && requested(f));
    const parts = [];
    if (avail.length) {
      parts.push(h('fieldset', { class: 'freight-choices' },
        h('legend', { text: `Available to ${stage} (${avail.length})` }),
        h('ul', { class: 'choices', id: 'promote-available' }, avail.map((f) => {
          const id = `pf-${f.metadata.name}`;
          return h('li', { dataset: { freight: f.metadata.name } },
            h('input', { type: 'radio', name: 'freight', id, value: f.metadata.name, checked: f.metadata.name === select }),
            h('label', { for: id }, freightItem(f)));
        }))));
    } else {
      parts.push(h('p', { class: 'callout sp-Steady', id: 'promote-none', text: `No Freight is available to ${stage}: it comes from the Warehouse directly, once verified in an upstream stage, or once approved for this stage.` }));
    }
    if (other.length) {
      parts.push(h('section', { class: 'freight-other', 'aria-labelledby': 'promote-other-title' },
        h('h3', { id: 'promote-other-title', text: `Not available to ${stage} (${other.length})` }),
        h('p', { class: 'muted small', text: 'Not verified upstream yet. Approving it for this stage makes it available here.' }),
        h('ul', { class: 'choices', id: 'promote-unavailable' }, other.slice(0, 20).map((f) => {
          const id = `pu-${f.metadata.name}`;
          return h('li', { dataset: { freight: f.metadata.name } },
            h('div', { class: 'choice-text', id }, freightItem(f)),
            h('button', {
              type: 'button', class: 'btn small', 'aria-describedby': id, text: 'Approve for this Stage',
              onclick: async () => {
                d.error.hidden = true;
                setBusy(true);
                try {
                  await approveFreight(o.project, f.metadata.name, stage);
                  d.status.textContent = `Approved ${freightLabel(f.metadata.name, f.alias)} for ${stage}: it can be promoted now.`;
                  setBusy(false);
                  await load(f.metadata.name);
                  d.body.querySelector('input[name="freight"]:checked')?.focus();
                } catch (e) {
                  setBusy(false);
                  fail(e);
                }
              },
            }));
        })),
        other.length > 20 ? h('p', { class: 'muted small', text: `And ${other.length - 20} older.` }) : null));
    }
    d.body.replaceChildren(...parts);
    setBusy(false);
    d.confirm.disabled = !avail.length;
    const first = d.body.querySelector('input[name="freight"]:checked') || d.body.querySelector('input[name="freight"]');
    if (first && !select) first.focus();
  }

  d.current = {
    returnFocus: document.activeElement,
    async submit() {
      if (busy) return;
      const name = chosen();
      if (!name) {
        fail(new ApiError(0, '', 'Choose the Freight to promote.'));
        return;
      }
      d.error.hidden = true;
      setBusy(true);
      try {
        const pr = await promote(o.project, stage, name);
        d.el.close('confirm');
        toast(`Promotion ${pr.metadata.name} created.`);
        if (o.done) o.done(pr);
      } catch (e) {
        fail(e);
      } finally {
        setBusy(false);
      }
    },
  };
  d.title.textContent = `Promote to ${stage}`;
  d.desc.textContent = `Choose the Freight to promote. The stage's ${nSteps} promotion step${nSteps === 1 ? '' : 's'} run with it, after any promotion of ${stage} before it.`;
  d.status.textContent = '';
  d.error.hidden = true;
  d.error.textContent = '';
  d.el.showModal();
  d.cancel.focus();
  load('');
}

/** freightItem is a piece of Freight in a few lines: alias, short name, age, artifacts. */
function freightItem(f, now = Date.now()) {
  const c = f.metadata.creationTimestamp;
  return h('span', { class: 'choice-body' },
    h('span', { class: 'choice-top' },
      h('strong', { class: 'fr-alias', text: f.alias || short(f.metadata.name) }),
      h('code', { class: 'muted', title: f.metadata.name, text: short(f.metadata.name) }),
      c ? h('time', { class: 'muted small', datetime: c, title: fullTime(c), text: relTime(c, now) }) : null),
    h('span', { class: 'muted small fr-art' }, originText(f.origin) ? `${originText(f.origin)} · ` : '', artifactText(f)));
}
