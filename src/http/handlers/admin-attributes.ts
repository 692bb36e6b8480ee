import { IndexNameError, type IndexedAttribute } from '../../domain/indexed-attributes';
import { formatTimestamp } from '../../domain/timestamps';
import { errors } from '../../errors';
import { indexAttribute, listIndexedAttributes, unindexAttribute } from '../../usecases/records/indexed-attributes';
import { adminCall, type Handler } from '../context';

/** An indexed attribute as the admin API shows it. */
const shown = (a: IndexedAttribute) => ({ name: a.name, state: a.state, created: formatTimestamp(a.created), ready: a.ready && formatTimestamp(a.ready) });

/** /attributes/index: indexes an attribute of the records for /entity.find; built in the background (state `building`, then `ready`). */
export const indexAttributeHandler: Handler = async (ctx) => {
  try {
    const { index, declared } = await indexAttribute(ctx.services, { ...adminCall(ctx), name: ctx.params.require('name') });
    return { result: shown(index), created: declared };
  } catch (e) {
    if (e instanceof IndexNameError) throw errors.invalidArgument('name', e.message);
    throw e;
  }
};

/** /attributes/list: the indexed attributes, building or ready. */
export const listIndexedAttributesHandler: Handler = async (ctx) => ({ results: (await listIndexedAttributes(ctx.services, { applicationId: ctx.app.id })).map(shown) });

/** /attributes/unindex: removes an attribute's index (searches on it scan again, within the cost limits). */
export const unindexAttributeHandler: Handler = async (ctx) => {
  try {
    await unindexAttribute(ctx.services, { ...adminCall(ctx), name: ctx.params.require('name') });
  } catch (e) {
    if (e instanceof IndexNameError) throw errors.invalidArgument('name', e.message);
    throw e;
  }
  return {};
};
