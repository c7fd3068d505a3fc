import type { AgentRow } from '../../../db/repos/agents';
import { listAgentsQuery } from '../../../db/repos/agents';
import { ensureDefaultGroup, findGroup, listGroupsQuery, type GroupView } from '../../../db/repos/groups';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { labelFilter } from '../../http/labels';
import { z } from '../../http/zod';
import { problems } from '../../problems';
import { moveAgentToGroup } from '../../../domain/agents';
import { createGroup, deleteGroup, restoreGroup, updateGroup } from '../../../domain/groups';
import { agentSchema, presentAgent } from '../agents/schema';
import type { ResourceRouteOptions } from '../options';
import { groupBody, groupListQuery, groupSchema, memberBody, presentGroup, presentGroupView } from './schema';

const groupId = z.object({ id: z.uuid() });

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
        const row = await createGroup(db, principal.tenantId, body);
        const group = presentGroupView(row);
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
        const { row, memberCount } = await updateGroup(db, principal.tenantId, params.id, body, ifMatchVersions(ctx));
        const group = presentGroup(row, memberCount);
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
        const row = await deleteGroup(db, principal.tenantId, params.id, ifMatchVersions(ctx));
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
        const row = await restoreGroup(db, principal.tenantId, params.id, ifMatchVersions(ctx));
        const group = presentGroupView(row);
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
