import fs from 'node:fs';
import path from 'node:path';
import express, { type Request, type Response } from 'express';
import { WIDGET_PATH } from '../domain/proof-of-work';
import { peerBudgetKey } from '../domain/addresses';
import type { Application } from '../domain/storage/applications';
import type { Client } from '../domain/clients';
import { projectRoot } from '../paths';
import { challengeRequired, issueChallenge } from '../usecases/login/proof-of-work';
import type { Services } from '../usecases/services';
import { escape, originOf } from './pages';

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

/**
 * The proof-of-work widget a page's form carries when the client asks for a solved challenge now
 * (docs/proof-of-work.md): a fresh challenge, rendered into the page, solved by the widget as the
 * page loads (renderPage's `widget`); undefined when none is asked for.
 */
export async function powHtml(services: Services, req: Request, res: Response, app: Application, client: Client, locale: string): Promise<string | undefined> {
  const ctx = { origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services, client };
  if (!(await challengeRequired(ctx))) return undefined;
  const challenge = await issueChallenge(ctx);
  const language = widgetLanguage(locale);
  return `<div id="pow" class="pow" data-challenge="${escape(JSON.stringify(challenge))}"${language ? ` data-language="${language}"` : ''}></div>`;
}

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
