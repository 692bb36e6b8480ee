import { renderAccountExport } from '../../domain/account-export';
import { exportOwnAccount } from '../../usecases/account/export-account';
import { callUseCase } from '../login-calls';
import { pageFailure } from '../hosted';
import { actionForm, type Page, requestOf, say, sayHtml, type Section, type SignedWork } from './parts';

/** The right of access: everything kept of the account, as one file. */
export const dataSection: Section = {
  id: 'h-data',
  title: 'yourData',
  draw: ({ s: { locale }, token }) => `<p>${sayHtml(locale)('exportHelp')}</p>` + actionForm('/account/export', token, say(locale, 'exportData'), {}, '', true),
};

/** The account's export, as a JSON file to download (the person's own: no secret). */
export const exportData = (p: Page): SignedWork => async (req, res, s) => {
  const got = await callUseCase(p.services, req, res, s.app, exportOwnAccount, requestOf(s), { token: s.session });
  if (got.error) {
    const { status, shown } = pageFailure(res, s.locale, 'account', got.error);
    return p.show(req, res, s, status, shown);
  }
  const day = got.result.exportedAt.toISOString().slice(0, 10);
  res.set('Content-Disposition', `attachment; filename="${s.app.name}-account-${day}.json"`).set('Cache-Control', 'no-store')
    .type('application/json').send(`${JSON.stringify(renderAccountExport(got.result, { forThePerson: true }), null, 2)}\n`);
};
