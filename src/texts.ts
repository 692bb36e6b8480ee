import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from './paths';

/** The locales of the pages (those of the standard flow); a page in another locale falls back to en-US. */
export const PAGE_LOCALES = ['en-US', 'fr-FR', 'de-DE', 'es-ES'] as const;
export type PageLocale = (typeof PAGE_LOCALES)[number];

/** The parts of the texts file: what every page shows, each page's own, and the API's few messages of its own. */
export type TextSection = 'common' | 'hosted' | 'resetPassword' | 'verifyEmail' | 'undoEmailChange' | 'account' | 'api' | 'console';
const SECTIONS: readonly TextSection[] = ['common', 'hosted', 'resetPassword', 'verifyEmail', 'undoEmailChange', 'account', 'api', 'console'];

/** Where the texts live, beside the emails' (templates/README.md). */
export const TEXTS_FILE = path.join(projectRoot(), 'templates', 'pages', 'strings.json');

/**
 * The texts of every locale, read once: a locale that lacks a text en-US has (or has one en-US
 * lacks) stops the process at start, as a missing email string does, never a page in use.
 */
export function loadTexts(file = TEXTS_FILE): Record<PageLocale, Record<TextSection, Record<string, string>>> {
  const all = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, Record<string, Record<string, string>>>;
  const problems = SECTIONS.filter((section) => Object.keys(all['en-US']?.[section] ?? {}).length === 0).map((section) => `en-US has no ${section} texts`);
  for (const locale of PAGE_LOCALES) {
    for (const section of SECTIONS) {
      const want = Object.keys(all['en-US']?.[section] ?? {});
      const have = all[locale]?.[section] ?? {};
      const missing = want.filter((k) => typeof have[k] !== 'string');
      const extra = Object.keys(have).filter((k) => !want.includes(k));
      if (missing.length > 0) problems.push(`${locale} ${section} lacks ${missing.join(', ')}`);
      if (extra.length > 0) problems.push(`${locale} ${section} has ${extra.join(', ')}, which en-US lacks`);
    }
  }
  if (problems.length > 0) throw new Error(`${path.relative(projectRoot(), file)}: ${problems.join('; ')}`);
  return all as Record<PageLocale, Record<TextSection, Record<string, string>>>;
}

const TEXTS = loadTexts();

/** The texts of one section in `locale` (a locale of PAGE_LOCALES; any other falls back to en-US). */
export function textsOf(section: TextSection, locale: string): Readonly<Record<string, string>> {
  return (TEXTS[locale as PageLocale] ?? TEXTS['en-US'])[section];
}

/** A text with its `{name}` placeholders filled. */
export const filled = (template: string, values: Record<string, string> = {}) =>
  template.replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? '');
