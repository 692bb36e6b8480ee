import type * as OidcProvider from 'oidc-provider';
import { requireEsModule } from '../domain/es-modules';

/** panva's `oidc-provider` (docs/decisions.md), published as ES modules only: loaded as src/domain/es-modules.ts says. */
export const oidcProviderModule = (): typeof OidcProvider => requireEsModule<typeof OidcProvider>('oidc-provider');
