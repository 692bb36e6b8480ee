import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { MailFields } from '../domain/mail';
import type { Logger } from '../logger';

export const FALLBACK_LOCALE = 'en-US';

/** Values a message fills in; anything else in a template is left empty. The fields some emails say besides the greeting are MailFields (src/domain/mail.ts). */
export interface MailValues extends MailFields {
  appName: string;
  /** The application's palette (see src/domain/brand.ts); the default accent when absent. */
  accent?: string;
  onAccent?: string;
  accentText?: string;
  /** The application's logo: the templates' `mj-image` with css-class="logo" shows it; without one that image is left out. */
  logoUrl?: string;
  name: string;
  email: string;
  link: string;
  expiresIn?: string;
  /** A one-time sign-in code to type (email-code). */
  code?: string;
}

export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

interface Compiled {
  subject: string;
  /** The HTML with the logo image, and without it. */
  html: { logo: string; plain: string };
  text: string;
}

/**
 * Colours a template writes for the application's palette (mjml checks colours, so the templates
 * carry these stand-ins, which become placeholders once compiled): the accent as a fill, the text
 * on it, and the accent as text on white.
 */
const PALETTE: Record<string, 'accent' | 'onAccent' | 'accentText'> = { '#3b4cca': 'accent', '#fffffe': 'onAccent', '#3b4ccb': 'accentText' };
const DEFAULT_PALETTE = { accent: '#3b4cca', onAccent: '#ffffff', accentText: '#3b4cca' };
const LOGO = /<mj-image\b[^>]*css-class="logo"[^>]*\/>/;

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

const definedOnly = (values: MailValues) => Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as unknown as MailValues;

const PLACEHOLDER = /\{\{(\w+)\}\}/g;

function fill(template: string, values: MailValues, escape: (v: string) => string): string {
  return template.replace(PLACEHOLDER, (_m, key: string) => escape(String((values as unknown as Record<string, unknown>)[key] ?? '')));
}

// building an Intl formatter costs far more than using one: one per locale and unit
const durationFormats = new Map<string, Intl.NumberFormat>();

/** "1 hour", "7 jours", "1 Stunde", "7 días": how long a link lives, in the message's language. */
export function formatDuration(seconds: number, locale: string): string {
  const [value, unit] = seconds % 86_400 === 0 ? [seconds / 86_400, 'day'] : seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : [Math.ceil(seconds / 60), 'minute'];
  const key = `${locale}:${unit}`;
  let format = durationFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(locale, { style: 'unit', unit, unitDisplay: 'long' });
    if (durationFormats.size < 1000) durationFormats.set(key, format);
  }
  return format.format(value);
}

// the compiling thread's whole program; it receives mjml's resolved path, so it runs the same
// whether the worker runs from dist/ or from the TypeScript sources in tests
const COMPILER = `
const { parentPort, workerData } = require('node:worker_threads');
const loaded = require(workerData.mjml);
const mjml2html = typeof loaded === 'function' ? loaded : loaded.default;
(async () => {
  const compiled = [];
  for (const source of workerData.sources) {
    try {
      const result = await mjml2html(source, { validationLevel: 'strict', minify: false });
      compiled.push({ html: result.html, errors: result.errors.map((e) => e.formattedMessage) });
    } catch (e) {
      // strict validation throws: the error belongs to this source, whose template the caller names
      const details = e && Array.isArray(e.details) ? e.details.map((d) => d.formattedMessage) : [];
      compiled.push({ html: '', errors: details.length ? details : [String((e && e.message) || e)] });
    }
  }
  parentPort.postMessage({ compiled });
})().catch((e) => parentPort.postMessage({ error: String((e && e.message) || e) }));
`;

/**
 * MJML `sources` compiled to HTML (with mjml's strict validation's errors), on a thread that ends
 * when they are: mjml and what it loads (about 80 MB) never stay in the process, whose heap stays
 * that much smaller for its whole life (docs/decisions.md, "Libraries loaded when used").
 */
function compileMjml(sources: string[]): Promise<{ html: string; errors: string[] }[]> {
  return new Promise((resolve, reject) => {
    const thread = new Worker(COMPILER, { eval: true, workerData: { mjml: require.resolve('mjml'), sources } });
    // the answer settles it, and the thread is ended then, whatever mjml may have left open
    thread.once('message', (answer: { compiled?: { html: string; errors: string[] }[]; error?: string }) => {
      if (answer.compiled) resolve(answer.compiled);
      else reject(new Error(`the email templates could not be compiled: ${answer.error}`));
      void thread.terminate();
    });
    thread.once('error', reject);
    thread.once('exit', (code) => reject(new Error(`the email templates could not be compiled: the compiling thread ended with code ${code}`)));
  });
}

/**
 * The email templates of `dir` (one folder per email: email.mjml + strings.json by locale),
 * compiled once per template and locale when the worker starts (all at once, on a thread of
 * their own: compileMjml). A message then only fills its
 * values in: HTML-escaped in the HTML part, plain in the text part, without line breaks in the
 * subject. An unknown locale falls back to en-US, and says so in the log.
 */
export async function loadMailTemplates(dir: string, logger: Logger) {
  const compiled = new Map<string, Compiled>();
  const locales = new Map<string, string[]>();
  /** What each template and locale needs compiled: the MJML with the logo, and without it. */
  const wanted: { name: string; locale: string; subject: string; text: string; logo: string; plain: string }[] = [];
  for (const name of fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, 'email.mjml'))).sort()) {
    const source = fs.readFileSync(path.join(dir, name, 'email.mjml'), 'utf8');
    const strings = JSON.parse(fs.readFileSync(path.join(dir, name, 'strings.json'), 'utf8')) as Record<string, Record<string, string>>;
    if (!strings[FALLBACK_LOCALE]) throw new Error(`templates/${name}/strings.json has no ${FALLBACK_LOCALE} strings`);
    locales.set(name, Object.keys(strings));
    for (const [locale, t] of Object.entries(strings)) {
      const mjml = source
        .replace(/\{\{t\.(\w+)\}\}/g, (_m, key: string) => {
          if (t[key] === undefined) throw new Error(`templates/${name}/strings.json: ${locale} has no "${key}"`);
          return escapeHtml(t[key]);
        })
        .replace(/\{\{lang\}\}/g, locale.slice(0, 2));
      wanted.push({ name, locale, subject: t.subject, text: t.text, logo: mjml, plain: mjml.replace(LOGO, '') });
    }
  }
  const results = await compileMjml(wanted.flatMap((w) => [w.logo, w.plain]));
  wanted.forEach((w, i) => {
    const html = (result: { html: string; errors: string[] }) => {
      if (result.errors.length > 0) throw new Error(`templates/${w.name}/email.mjml: ${result.errors.join('; ')}`);
      return result.html.replace(/#(3b4cca|3b4ccb|fffffe)\b/gi, (c) => `{{${PALETTE[c.toLowerCase()]}}}`);
    };
    compiled.set(`${w.name}:${w.locale}`, { subject: w.subject, html: { logo: html(results[2 * i]), plain: html(results[2 * i + 1]) }, text: w.text });
  });

  return {
    names: () => [...locales.keys()],
    locales: (name: string) => locales.get(name) ?? [],
    render(name: string, locale: string, values: MailValues): RenderedMail {
      let template = compiled.get(`${name}:${locale}`);
      if (!template) {
        if (!locales.has(name)) throw new Error(`there is no email template "${name}"`);
        logger.warn({ template: name, locale }, `no ${locale} strings for this email; sending ${FALLBACK_LOCALE}`);
        template = compiled.get(`${name}:${FALLBACK_LOCALE}`)!;
      }
      return {
        subject: fill(template.subject, values, (v) => v.replace(/[\r\n]+/g, ' ')),
        html: fill(template.html[values.logoUrl ? 'logo' : 'plain'], { ...DEFAULT_PALETTE, ...definedOnly(values) }, escapeHtml),
        text: fill(template.text, values, (v) => v),
      };
    },
  };
}
export type MailTemplates = Awaited<ReturnType<typeof loadMailTemplates>>;
