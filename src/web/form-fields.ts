import type { CompiledForm } from '../domain/flow-forms';
import type { FlowService, FlowVersion } from '../domain/flows';
import { escape, type PageLocale } from './pages';
import { textsOf } from '../texts';

/**
 * The browser's copy of the flow's `format` rules: the same presets as the server's checks (the
 * server checks every value again; `email` is looser here than there).
 */
const BROWSER_FORMATS: Record<string, string> = {
  alpha: '^[A-Za-z]+$',
  alphaExtended: '^\\p{L}+$',
  alphaExtendedSpaces: '^[\\p{L} ]+$',
  alphaNumeric: '^[A-Za-z0-9]+$',
  alphaNumericExtended: '^[\\p{L}\\p{N}]+$',
  email: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$',
  numeric: '^\\d+$',
  numericReal: '^-?\\d+(\\.\\d+)?$',
  phone: '^[0-9()+\\-. ]{7,20}$',
  phoneInternational: '^\\+[1-9][0-9 ()\\-.]{6,20}$',
  zipCode: '^\\d{5}$',
  'zipCode+4': '^\\d{5}-\\d{4}$',
};

const AUTOCOMPLETE: Record<string, string> = {
  email: 'email', givenName: 'given-name', familyName: 'family-name', displayName: 'nickname', username: 'username',
  birthdate: 'bday', mobileNumber: 'tel',
};

/**
 * Checks a form's fields in the browser with the flow's own rules and messages before it is sent:
 * each message goes into the field's error line (announced: role="alert"), the field is marked
 * aria-invalid, and focus moves to the first field in error. A fixed field's error line keeps its
 * place, so nothing under it moves. Without scripts the server checks alone.
 */
export const VALIDATE_SCRIPT = `for(const f of document.querySelectorAll('form[data-validate]')){f.noValidate=true;`
  + `const check=(i,quiet)=>{const v=i.type==='checkbox'?(i.checked?i.value:''):i.value,rules=JSON.parse(i.dataset.rules||'[]');let m='';for(const r of rules){`
  + `const ok=r.r==='required'?v.trim()!=='':!v||(r.r==='minLength'?[...v].length>=r.v:r.r==='maxLength'?[...v].length<=r.v:`
  + `r.r==='format'?new RegExp(r.v,'u').test(v):r.r==='match'?v===(document.getElementById(r.v)||{}).value:true);if(!ok){m=r.m;break}}`
  // nothing under a field moves while the person moves on: leaving a field (change) never shows
  // a new error, only updates or clears one the last submit showed, and an error line once shown
  // keeps its height when its field is fixed. The click that blurs the field lands on the button
  // where it was, not where the page moved it
  + `const e=document.getElementById(i.id+'-error');if(quiet&&m&&!(e&&e.textContent))return !m;if(e){if(!m&&e.textContent){e.style.minHeight=e.offsetHeight+'px';e.classList.add('kept')}e.textContent=m}`
  + `if(m)i.setAttribute('aria-invalid','true');else i.removeAttribute('aria-invalid');return !m};`
  + `f.addEventListener('submit',(ev)=>{let first;for(const i of f.querySelectorAll('[data-rules]'))if(!check(i)&&!first)first=i;`
  + `if(first){ev.preventDefault();first.focus()}});`
  + `for(const i of f.querySelectorAll('[data-rules]'))i.addEventListener('change',()=>check(i,true))}`;

/**
 * A flow form's fields as HTML: each with its label (bound by id), placeholder, tip and the rules
 * the browser can check (`required`, lengths, formats, `match`) as attributes and for
 * VALIDATE_SCRIPT; the server's messages (`invalid`) in each field's error line. Values are
 * escaped; passwords are never sent back.
 */
export function renderFields(
  flows: FlowService, flow: FlowVersion, form: CompiledForm, locale: PageLocale,
  values: Record<string, string>, invalid: Record<string, string[]>,
): string {
  const t = (key: string | undefined) => (key ? flows.text(flow, key) : '');
  return form.fields.map(({ name, required, field }) => {
    const id = `f-${name}`;
    const errors = invalid[name] ?? [];
    const rules = field.validation.flatMap((r) => {
      const m = t(r.message);
      switch (r.rule) {
        case 'required': return required ? [{ r: 'required', m }] : [];
        case 'minLength': case 'maxLength': return [{ r: r.rule, v: Number(r.value), m }];
        case 'format': return BROWSER_FORMATS[String(r.value)] ? [{ r: 'format', v: BROWSER_FORMATS[String(r.value)], m }] : [];
        case 'match': return [{ r: 'match', v: `f-${String(r.value)}`, m }];
        default: return [];
      }
    });
    const rule = (kind: string) => field.validation.find((r) => r.rule === kind)?.value;
    const described = [field.tip ? `${id}-tip` : '', `${id}-error`].filter(Boolean).join(' ');
    const common = `id="${escape(id)}" name="${escape(name)}" aria-describedby="${escape(described)}"`
      + `${required ? ' required' : ''}${errors.length ? ' aria-invalid="true"' : ''}`
      + ` data-rules="${escape(JSON.stringify(rules))}"`;
    // a field the form does not require says so (a checkbox is a choice, never "optional")
    const label = escape(t(field.label) || name) + (!required && field.type !== 'checkbox' ? ` <span class="optional">(${escape(textsOf('common', locale).optional)})</span>` : '');
    const tip = field.tip ? `<p class="tip" id="${escape(id)}-tip">${escape(t(field.tip))}</p>` : '';
    const error = `<p class="error" id="${escape(id)}-error" role="alert">${errors.map(escape).join(' ')}</p>`;
    const value = field.type === 'password' ? '' : values[name] ?? '';
    const placeholder = field.placeholder ? ` placeholder="${escape(t(field.placeholder))}"` : '';
    const lengths = `${typeof rule('minLength') === 'number' ? ` minlength="${rule('minLength')}"` : ''}`
      + `${typeof rule('maxLength') === 'number' ? ` maxlength="${rule('maxLength')}"` : ''}`;
    switch (field.type) {
      case 'dateselect': {
        const [year, month, day] = (values[name] ?? '').split('-');
        const common = textsOf('common', locale);
        const parts = [common.year, common.month, common.day].map((partLabel, n) => {
          const part = ['year', 'month', 'day'][n];
          const size = n === 0 ? 'min="1900" max="2100"' : n === 1 ? 'min="1" max="12"' : 'min="1" max="31"';
          const v = values[`${name}[dateselect_${part}]`] ?? [year, month, day][n] ?? '';
          return `<span class="part"><label for="${escape(id)}-${part}">${escape(partLabel)}</label>`
            + `<input id="${escape(id)}-${part}" name="${escape(`${name}[dateselect_${part}]`)}" type="number" inputmode="numeric" ${size}`
            + `${/^\d{1,4}$/.test(v) ? ` value="${Number(v)}"` : ''} autocomplete="bday-${part}"></span>`;
        }).join('');
        return `<fieldset aria-describedby="${escape(described)}"><legend>${label}</legend><div class="date">${parts}</div>${tip}${error}</fieldset>`;
      }
      case 'select': {
        const options = (field.options ?? []).map((o) => `<option value="${escape(o.value)}"${o.value === value ? ' selected' : ''}>${escape(t(o.label))}</option>`);
        return `<label for="${escape(id)}">${label}</label><select ${common}><option value=""></option>${options.join('')}</select>${tip}${error}`;
      }
      case 'radio': {
        const options = (field.options ?? []).map((o, n) => `<label class="choice"><input type="radio" name="${escape(name)}" id="${escape(id)}${n ? `-${n}` : ''}" value="${escape(o.value)}"`
          + `${o.value === value ? ' checked' : ''}${required ? ' required' : ''}> ${escape(t(o.label))}</label>`);
        return `<fieldset aria-describedby="${escape(described)}"><legend>${label}</legend>${options.join('')}${tip}${error}</fieldset>`;
      }
      case 'checkbox':
        return `<label class="choice"><input type="checkbox" ${common} value="true"${value === 'true' ? ' checked' : ''}> ${label}</label>${tip}${error}`;
      case 'textarea':
        return `<label for="${escape(id)}">${label}</label><textarea ${common}${placeholder}${lengths}>${escape(value)}</textarea>${tip}${error}`;
      default: {
        const type = field.type === 'email' ? 'email' : field.type === 'password' ? 'password' : 'text';
        const auto = field.type === 'password'
          ? (field.schemaAttribute === 'password' || rule('match') !== undefined ? 'new-password' : 'current-password')
          // an identifier to sign in with: the browser may offer passkeys there too (conditional mediation)
          : field.type === 'email' ? (field.schemaAttribute === 'email' ? 'email' : 'username webauthn') : AUTOCOMPLETE[field.schemaAttribute ?? ''] ?? 'off';
        return `<label for="${escape(id)}">${label}</label><input ${common} type="${type}" autocomplete="${auto}"${placeholder}${lengths}`
          + `${value ? ` value="${escape(value)}"` : ''}>${tip}${error}`;
      }
    }
  }).join('');
}

/** The values a page sends back to the API for a form: only the form's own fields, as strings. */
export function formValues(form: CompiledForm, body: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, field } of form.fields) {
    const keys = field.type === 'dateselect' ? ['year', 'month', 'day'].map((p) => `${name}[dateselect_${p}]`) : [name];
    for (const key of keys) if (typeof body[key] === 'string') out[key] = body[key] as string;
  }
  return out;
}
