import type { AgentRow } from '../../../db/repos/agents';
import { groupHasAgents, listAgentsQuery } from '../../../db/repos/agents';
import { isUniqueViolation } from '../../../db/errors';
import { emitEvents } from '../../../db/repos/events';
import {
  DEFAULT_GROUP,
  ensureDefaultGroup,
  findGroup,
  insertGroup,
  listGroupsQuery,
  lockGroup,
  setGroupDeleted,
  updateGroup,
  type GroupView,
} from '../../../db/repos/groups';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { labelFilter } from '../../http/labels';
import { z } from '../../http/zod';
import { problems } from '../../problems';
import { moveAgentToGroup } from '../../../domain/agents';
import { agentSchema, presentAgent } from '../agents/schema';
import type { ResourceRouteOptions } from '../options';
import { groupBody, groupListQuery, groupSchema, memberBody, presentGroup, presentGroupView } from './schema';

const groupId = z.object({ id: z.uuid() });
const SOURCE = '/api/groups';

const nameTaken = (name: string) => problems.conflict(`A live group named '${name}' already exists.`);

/** Rethrows a unique violation on the live-name index as 409. */
function orNameTaken(name: string) {
  return (error: unknown): never => {
    if (isUniqueViolation(error)) throw nameTaken(name);
    throw error;
  };
}

export function groupsRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [...groupReadRoutes(options), ...groupChangeRoutes(), ...memberRoutes(options)];
}

/** Groups: list (creating the default group on first sight), create, read. */
function groupReadRoutes(options: ResourceRouteOptions): RouteDef[] {
  const withDefault = new Set<string>();
  return [
    route({
      method: 'get',
      path: '/api/groups',
      summary: 'List groups',
      tag: 'groups',
      permission: 'read',
      query: pageQuery.extend(groupListQuery.shape).strict(),
      response: { status: 200, description: 'A page of groups, oldest first.', schema: pageOf(groupSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        if (!withDefault.has(principal.tenantId)) {
          await ensureDefaultGroup(db, principal.tenantId);
          withDefault.add(principal.tenantId); // the default group cannot be deleted, so once is enough
        }
        const filters = {
          q: query.q,
          labels: labelFilter(query.label),
          includeDeleted: query.includeDeleted === 'true',
        };
        const page = await paginate<GroupView>(listGroupsQuery(db, principal.tenantId, filters), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'asc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentGroupView) };
      },
    }),
    route({
      method: 'post',
      path: '/api/groups',
      summary: 'Create a group',
      tag: 'groups',
      permission: 'operate',
      resource: 'group',
      etag: 'live',
      body: groupBody,
      response: { status: 201, description: 'The group.', schema: groupSchema },
      handler: async ({ db, principal, body }) => {
        await ensureDefaultGroup(db, principal.tenantId); // so `default` is taken before anyone else claims it
        const row = await insertGroup(db, principal.tenantId, body).catch(orNameTaken(body.name));
        const group = presentGroupView(row);
        await emitEvents(db, [
          { tenantId: principal.tenantId, type: 'group.created', source: SOURCE, subject: row.id, data: group },
        ]);
        return {
          status: 201,
          body: group,
          rowVersion: row.row_version,
          resourceId: row.id,
          headers: { Location: `/api/groups/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/groups/{id}',
      summary: 'One group (soft-deleted groups too, with `deletedAt`)',
      tag: 'groups',
      permission: 'read',
      resource: 'group',
      etag: 'live',
      params: groupId,
      response: { status: 200, description: 'The group.', schema: groupSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findGroup(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('group', params.id);
        return { body: presentGroupView(row), rowVersion: row.row_version };
      },
    }),
  ];
}

/** Changing a group: update, delete (members move to the default group) and restore. */
function groupChangeRoutes(): RouteDef[] {
  return [
    route({
      method: 'put',
      path: '/api/groups/{id}',
      summary: "Replace a group's name, description and labels",
      tag: 'groups',
      permission: 'operate',
      resource: 'group',
      etag: 'live',
      params: groupId,
      body: groupBody,
      response: { status: 200, description: 'The updated group.', schema: groupSchema },
      handler: async ({ db, principal, params, body, ctx }) => {
        const tenantId = principal.tenantId;
        const current = await findGroup(db, tenantId, params.id);
        if (!current) throw problems.notFound('group', params.id);
        if (current.name === DEFAULT_GROUP && !current.deleted_at && body.name !== DEFAULT_GROUP) {
          throw problems.conflict(`The '${DEFAULT_GROUP}' group cannot be renamed: agents without a group join it.`);
        }
        const row = await updateGroup(db, tenantId, params.id, body, ifMatchVersions(ctx)).catch(
          orNameTaken(body.name),
        );
        if (!row) {
          const now = await findGroup(db, tenantId, params.id);
          if (!now) throw problems.notFound('group', params.id);
          if (now.deleted_at)
            throw problems.conflict(`Group '${params.id}' is deleted; restore it before changing it.`);
          throw problems.preconditionFailed('group', params.id);
        }
        const group = presentGroup(row, current.member_count);
        await emitEvents(db, [{ tenantId, type: 'group.updated', source: SOURCE, subject: row.id, data: group }]);
        return { body: group, rowVersion: row.row_version };
      },
    }),
    route({
      method: 'delete',
      path: '/api/groups/{id}',
      summary: 'Soft-delete an empty group',
      tag: 'groups',
      permission: 'operate',
      resource: 'group',
      etag: 'live',
      params: groupId,
      response: { status: 204, description: 'Deleted; the new ETag is in the header.' },
      handler: async ({ db, principal, params, ctx }) => {
        const tenantId = principal.tenantId;
        const locked = await lockGroup(db, tenantId, params.id);
        if (!locked) throw problems.notFound('group', params.id);
        const versions = ifMatchVersions(ctx);
        if (versions && !versions.includes(locked.row_version)) throw problems.preconditionFailed('group', params.id);
        if (locked.deleted_at) throw problems.conflict(`Group '${locked.name}' is already deleted.`);
        if (locked.name === DEFAULT_GROUP)
          throw problems.conflict(`The '${DEFAULT_GROUP}' group cannot be deleted: agents without a group join it.`);
        if (await groupHasAgents(db, tenantId, params.id)) {
          throw problems.conflict(`Group '${locked.name}' still has agents; move them to another group first.`);
        }
        const row = await setGroupDeleted(db, params.id, true);
        await emitEvents(db, [
          { tenantId, type: 'group.deleted', source: SOURCE, subject: row.id, data: presentGroup(row, 0) },
        ]);
        return { status: 204, rowVersion: row.row_version };
      },
    }),
    route({
      method: 'post',
      path: '/api/groups/{id}/restore',
      summary: 'Restore a soft-deleted group',
      tag: 'groups',
      permission: 'operate',
      resource: 'group',
      etag: 'live',
      params: groupId,
      response: { status: 200, description: 'The restored group.', schema: groupSchema },
      handler: async ({ db, principal, params, ctx }) => {
        const tenantId = principal.tenantId;
        const locked = await lockGroup(db, tenantId, params.id);
        if (!locked) throw problems.notFound('group', params.id);
        const versions = ifMatchVersions(ctx);
        if (versions && !versions.includes(locked.row_version)) throw problems.preconditionFailed('group', params.id);
        if (!locked.deleted_at) throw problems.conflict(`Group '${locked.name}' is not deleted.`);
        await setGroupDeleted(db, params.id, false).catch((error: unknown) => {
          if (isUniqueViolation(error)) {
            throw problems.conflict(`A live group named '${locked.name}' exists; rename it before restoring this one.`);
          }
          throw error;
        });
        const row = (await findGroup(db, tenantId, params.id))!;
        const group = presentGroupView(row);
        await emitEvents(db, [{ tenantId, type: 'group.restored', source: SOURCE, subject: row.id, data: group }]);
        return { body: group, rowVersion: row.row_version };
      },
    }),
  ];
}

/** A group's static members: add or remove, and list. */
function memberRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    route({
      method: 'post',
      path: '/api/groups/{id}/members',
      summary: 'Add an agent to the group (it leaves its current group)',
      tag: 'groups',
      permission: 'operate',
      resource: 'group',
      etag: 'live',
      params: groupId,
      body: memberBody,
      response: { status: 200, description: 'The group, with the new member counted.', schema: groupSchema },
      handler: async ({ db, principal, params, body, ctx }) => {
        const tenantId = principal.tenantId;
        await moveAgentToGroup(db, tenantId, { agentId: body.agentId, groupId: params.id }, ifMatchVersions(ctx));
        const row = (await findGroup(db, tenantId, params.id))!;
        return { body: presentGroupView(row), rowVersion: row.row_version };
      },
    }),
    route({
      method: 'get',
      path: '/api/groups/{id}/members',
      summary: 'The agents in a group',
      tag: 'groups',
      permission: 'read',
      resource: 'group',
      params: groupId,
      query: pageQuery.strict(),
      response: { status: 200, description: 'A page of agents, by id.', schema: pageOf(agentSchema) },
      handler: async ({ db, principal, params, query, ctx }) => {
        if (!(await findGroup(db, principal.tenantId, params.id))) throw problems.notFound('group', params.id);
        const page = await paginate<AgentRow>(listAgentsQuery(db, principal.tenantId, { groupId: params.id }), query, {
          columns: [{ column: 'id', type: 'uuid' }],
          direction: 'asc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentAgent) };
      },
    }),
  ];
}
