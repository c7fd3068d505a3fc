import type { Knex } from 'knex';
import { findConfiguration, listConfigurationsQuery, type ConfigurationRow } from '../../../db/repos/configurations';
import { findVersionWithContent, listVersionsQuery, type VersionRow } from '../../../db/repos/configuration-versions';
import { changeConfiguration, createConfiguration } from '../../../domain/configurations/configurations';
import {
  checkVersionContent,
  publishConfigurationVersion,
  refuseManagedByGit,
  saveDraft,
} from '../../../domain/configurations/versions';
import type { Principal } from '../../auth/principal';
import { compareVersions } from '../../../domain/configurations/content-check';
import { ifMatchVersions } from '../../http/etag';
import { labelFilter } from '../../http/labels';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { contentProblemAt, problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import {
  compareQuery,
  compareSchema,
  configurationId,
  configurationSchema,
  createConfigurationBody,
  listConfigurationsQuery as listQuery,
  listVersionsQuery as versionsQuery,
  presentConfiguration,
  presentVersion,
  presentVersionSummary,
  saveDraftBody,
  updateConfigurationBody,
  versionParams,
  versionSchema,
  versionSummarySchema,
} from './schema';

const SOURCE = '/api/configurations';
const tag = 'configurations';

async function mustFind(db: Knex | Knex.Transaction, principal: Principal, id: string): Promise<ConfigurationRow> {
  const row = await findConfiguration(db, principal.tenantId, id);
  if (!row) throw problems.notFound('configuration', id);
  return row;
}

export function configurationsRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [...containerRoutes(options), ...versionRoutes(options)];
}

/** The configuration containers: list, create, read, rename and relabel. */
function containerRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/configurations',
      summary: 'List configurations',
      tag,
      permission: 'read',
      query: listQuery,
      response: {
        status: 200,
        description: 'A page of configurations, newest first.',
        schema: pageOf(configurationSchema),
      },
      handler: async ({ db, principal, query, ctx }) => {
        const filters = { q: query.q, format: query.format, labels: labelFilter(query.label) };
        const page = await paginate<ConfigurationRow>(listConfigurationsQuery(db, principal.tenantId, filters), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentConfiguration) };
      },
    }),
    route({
      method: 'post',
      path: '/api/configurations',
      summary: 'Create a configuration container (without versions)',
      tag,
      permission: 'operate',
      resource: 'configuration',
      etag: true,
      body: createConfigurationBody,
      response: { status: 201, description: 'The configuration.', schema: configurationSchema },
      handler: async ({ db, principal, body }) => {
        const row = await createConfiguration(db as Knex.Transaction, { tenant_id: principal.tenantId, ...body });
        const configuration = presentConfiguration(row);
        return {
          status: 201,
          body: configuration,
          rowVersion: row.row_version,
          resourceId: row.id,
          headers: { Location: `${SOURCE}/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/configurations/{id}',
      summary: 'One configuration',
      tag,
      permission: 'read',
      resource: 'configuration',
      etag: true,
      params: configurationId,
      response: { status: 200, description: 'The configuration.', schema: configurationSchema },
      handler: async ({ db, principal, params }) => {
        const row = await mustFind(db, principal, params.id);
        return { body: presentConfiguration(row), rowVersion: row.row_version };
      },
    }),
    route({
      method: 'put',
      path: '/api/configurations/{id}',
      summary: 'Replace name, description and labels (the format is fixed)',
      tag,
      permission: 'operate',
      resource: 'configuration',
      etag: true,
      params: configurationId,
      body: updateConfigurationBody,
      response: { status: 200, description: 'The updated configuration.', schema: configurationSchema },
      handler: async ({ db, principal, params, body, ctx }) => {
        const request = { id: params.id, versions: ifMatchVersions(ctx), changes: body };
        const row = await changeConfiguration(db as Knex.Transaction, principal.tenantId, request);
        return { body: presentConfiguration(row), rowVersion: row.row_version };
      },
    }),
  ];
}

/** A configuration's versions: save a draft, list, compare, read, publish. */
function versionRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    route({
      method: 'post',
      path: '/api/configurations/{id}/versions',
      summary: 'Save a draft version (numbered 1, 2, ...)',
      tag,
      permission: 'operate',
      resource: 'configuration',
      etag: true,
      params: configurationId,
      body: saveDraftBody,
      response: {
        status: 201,
        description: 'The draft (without its content); the ETag is the configuration’s new one.',
        schema: versionSummarySchema,
      },
      // Before the transaction: parsing 1 MiB must hold neither a connection nor the lock.
      prepare: async ({ db, principal, params, body }) => {
        const found = await mustFind(db, principal, params.id);
        refuseManagedByGit(found);
        return checkVersionContent(found.format, body.content).catch(contentProblemAt('body.content'));
      },
      handler: async ({ db, principal, params, ctx, prepared }) => {
        const saved = await saveDraft(db as Knex.Transaction, principal.tenantId, {
          id: params.id,
          versions: ifMatchVersions(ctx),
          content: prepared,
          author: principal.name,
        });
        return {
          status: 201,
          body: presentVersionSummary(saved.version),
          rowVersion: saved.configuration.row_version,
          headers: { Location: `${SOURCE}/${params.id}/versions/${saved.version.version}` },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/configurations/{id}/versions',
      summary: 'List versions, newest first (without content)',
      tag,
      permission: 'read',
      resource: 'configuration',
      params: configurationId,
      query: versionsQuery,
      response: { status: 200, description: 'A page of versions.', schema: pageOf(versionSummarySchema) },
      handler: async ({ db, principal, params, query, ctx }) => {
        await mustFind(db, principal, params.id);
        const page = await paginate<VersionRow>(listVersionsQuery(db, params.id, query), query, {
          columns: [{ column: 'version', type: 'bigint' }],
          direction: 'desc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentVersionSummary) };
      },
    }),
    // Before `/versions/{version}`: the router tries routes in order, so `compare` is never a version.
    route({
      method: 'get',
      path: '/api/configurations/{id}/versions/compare',
      summary: 'Compare two versions: a unified diff and, for YAML and JSON, key-level changes',
      tag,
      permission: 'read',
      resource: 'configuration',
      params: configurationId,
      query: compareQuery,
      response: { status: 200, description: 'The differences from `from` to `to`.', schema: compareSchema },
      handler: async ({ db, principal, params, query }) => {
        const configuration = await mustFind(db, principal, params.id);
        const [from, to] = await Promise.all([
          findVersionWithContent(db, params.id, query.from),
          findVersionWithContent(db, params.id, query.to),
        ]);
        if (!from) throw problems.notFound('version', `${params.id}/versions/${query.from}`);
        if (!to) throw problems.notFound('version', `${params.id}/versions/${query.to}`);
        const { unifiedDiff, changes } = await compareVersions(configuration.name, configuration.format, from, to);
        return { body: { from: from.version, to: to.version, unifiedDiff, changes } };
      },
    }),
    route({
      method: 'get',
      path: '/api/configurations/{id}/versions/{version}',
      summary: 'One version, with its content',
      tag,
      permission: 'read',
      resource: 'configuration',
      params: versionParams,
      response: { status: 200, description: 'The version.', schema: versionSchema },
      handler: async ({ db, principal, params }) => {
        await mustFind(db, principal, params.id);
        const row = await findVersionWithContent(db, params.id, params.version);
        if (!row) throw problems.notFound('version', `${params.id}/versions/${params.version}`);
        return { body: presentVersion(row) };
      },
    }),
    route({
      method: 'post',
      path: '/api/configurations/{id}/versions/{version}/publish',
      summary: 'Publish a draft (idempotent: publishing a published version returns it unchanged)',
      tag,
      permission: 'operate',
      resource: 'configuration',
      etag: true,
      params: versionParams,
      response: {
        status: 200,
        description: 'The published version (without its content); the ETag is the configuration’s.',
        schema: versionSummarySchema,
      },
      handler: async ({ db, principal, params, ctx }) => {
        const published = await publishConfigurationVersion(db as Knex.Transaction, principal.tenantId, {
          id: params.id,
          version: params.version,
          versions: ifMatchVersions(ctx),
          publishedBy: principal.name,
        });
        return { body: presentVersionSummary(published.version), rowVersion: published.configuration.row_version };
      },
    }),
  ];
}
