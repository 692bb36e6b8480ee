import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { WIDGET_PATH } from '../domain/proof-of-work';
import { projectRoot } from '../paths';

/**
 * The proof-of-work widget's files (docs/proof-of-work.md), served by Gatehouse itself from the
 * `altcha` package: its module without inline styles or workers (the pages' Content-Security-Policy
 * allows no inline style), its style sheet, the PBKDF2 worker, and the languages of the pages.
 */
const FILES: Readonly<Record<string, { file: string; type: string }>> = {
  'altcha.js': { file: 'dist/external/altcha.min.js', type: 'text/javascript' },
  'altcha.css': { file: 'dist/external/altcha.css', type: 'text/css' },
  'pbkdf2.js': { file: 'dist/workers/pbkdf2.js', type: 'text/javascript' },
  'i18n-fr-fr.js': { file: 'dist/i18n/fr-fr.js', type: 'text/javascript' },
  'i18n-de.js': { file: 'dist/i18n/de.js', type: 'text/javascript' },
  'i18n-es-es.js': { file: 'dist/i18n/es-es.js', type: 'text/javascript' },
};

/** The widget's language for a page's locale (none: its own English). */
export const widgetLanguage = (locale: string): string | undefined =>
  ({ 'fr-FR': 'fr-fr', 'de-DE': 'de', 'es-ES': 'es-es' } as Record<string, string>)[locale];

/** GET /assets/altcha/<file>: read once, kept in memory, cached by browsers for a day. */
export function widgetAssetRoutes() {
  const router = express.Router();
  const root = path.join(projectRoot(), 'node_modules', 'altcha');
  const cache = new Map<string, Buffer>();
  router.get(`${WIDGET_PATH}/:name`, (req, res, next) => {
    const entry = Object.hasOwn(FILES, req.params.name) ? FILES[req.params.name] : undefined;
    if (!entry) return next();
    let body = cache.get(entry.file);
    if (!body) {
      body = fs.readFileSync(path.join(root, entry.file));
      cache.set(entry.file, body);
    }
    res.set({ 'Content-Type': `${entry.type}; charset=utf-8`, 'Cache-Control': 'public, max-age=86400', 'X-Content-Type-Options': 'nosniff' }).send(body);
  });
  return router;
}
