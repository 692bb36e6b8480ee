import type { Application } from './storage/applications';

export type { Application };

export const APP_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export class ApplicationExistsError extends Error {}

export interface CreatedApplication {
  app: string;
  flow: { name: string; version: number };
  flows: { name: string; version: number }[];
  clients: { owner: { client_id: string; client_secret: string }; login: { client_id: string; client_secret: string } };
}
