import * as initial from './0001-initial';

/** Every migration, in order. Append new ones; never edit or reorder landed ones. */
export const MIGRATIONS = [{ name: '0001-initial', ...initial }];
