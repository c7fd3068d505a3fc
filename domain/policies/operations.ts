/**
 * What operators do to policies: create and replace one (a change to what was approved
 * makes it a draft again), approve it (four eyes: an admin other than its author, a PAT
 * counting as the admin who issued it), switch it on or off, and the built-ins every tenant
 * starts with. Each writes its `policy.*` event, the policy as the API shows it.
 */
import type { Db } from '../../db/connection';
import { emitEvents, type EventType } from '../../db/repos/events';
import { liveGroupIds } from '../../db/repos/groups';
import {
  approvePolicy as approvePolicyRow,
  findPolicy,
  identitiesBehind,
  insertPolicy,
  insertPoliciesIfAbsent,
  replacePolicy as replacePolicyRow,
  setPolicyEnabled,
  type PolicyChanges,
  type PolicyRow,
} from '../../db/repos/policies';
import { DomainError, ForbiddenError, InvalidFieldError, nameTaken, NotFoundError, StaleVersionError } from '../errors';
import { BUILTIN_AUTHOR, BUILTIN_POLICIES } from './builtin';
import { checkExpression } from './cel';

/** How a policy reads, in the API and in its events. */
export function policyView(row: PolicyRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    expression: row.expression,
    scope: row.scope,
    state: row.state,
    enabled: row.enabled,
    builtin: row.builtin,
    author: row.author,
    approver: row.approver,
    approvedAt: row.approved_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

async function announce(db: Db, type: EventType, row: PolicyRow): Promise<void> {
  await emitEvents(db, [
    { tenantId: row.tenant_id, type, source: '/api/policies', subject: row.id, data: policyView(row) },
  ]);
}

/** The built-in policies, created with their events the first time a tenant's policies are read. */
export async function ensureBuiltinPolicies(db: Db, tenantId: string): Promise<void> {
  const builtins = BUILTIN_POLICIES.map((policy) => ({
    ...policy,
    tenant_id: tenantId,
    scope: [],
    enabled: false,
    builtin: true,
    author: BUILTIN_AUTHOR,
    state: 'approved' as const,
    approver: BUILTIN_AUTHOR,
    approved_at: new Date(),
  }));
  await db.transaction(async (trx) => {
    const created = await insertPoliciesIfAbsent(trx, builtins);
    for (const row of created) await announce(trx, 'policy.created', row);
  });
}

/** A policy's expression type-checks to bool: InvalidFieldError on `expression` (the checker's message, with its offset) otherwise. */
export function checkPolicyExpression(expression: string): void {
  const checked = checkExpression(expression);
  if (!checked.ok) throw new InvalidFieldError('expression', checked.message);
}

/**
 * The expression must type-check to bool (InvalidFieldError on `expression`, with the
 * checker's message and offset); the scope must name live groups of the tenant
 * (NotFoundError, as a rollout's target answers). Returns the changes with the scope
 * deduplicated and sorted, as it is stored and compared.
 */
async function checkedChanges(db: Db, tenantId: string, changes: PolicyChanges): Promise<PolicyChanges> {
  checkPolicyExpression(changes.expression);
  const groups = await liveGroupIds(db, tenantId, changes.scope);
  const missing = changes.scope.find((id) => !groups.has(id));
  if (missing !== undefined) throw new NotFoundError('group', missing);
  return { ...changes, scope: [...new Set(changes.scope)].sort() };
}

/** Creates a custom policy, as a draft that an admin other than `author` approves. */
export async function createPolicy(
  db: Db,
  tenantId: string,
  request: PolicyChanges,
  author: string,
): Promise<PolicyRow> {
  const changes = await checkedChanges(db, tenantId, request);
  const row = await insertPolicy(db, { ...changes, tenant_id: tenantId, author }).catch(
    nameTaken('policy', changes.name),
  );
  await announce(db, 'policy.created', row);
  return row;
}

/**
 * After a conditional UPDATE matched nothing: says why, or returns the row when the
 * operation was already done (`done`), which makes it idempotent.
 */
async function explainNoMatch(
  db: Db,
  tenantId: string,
  id: string,
  versions: number[] | undefined,
  refuse: (row: PolicyRow) => void,
  done: (row: PolicyRow) => boolean,
): Promise<PolicyRow> {
  const row = await findPolicy(db, tenantId, id);
  if (!row) throw new NotFoundError('policy', id);
  if (versions && !versions.includes(row.row_version)) throw new StaleVersionError('policy', id);
  refuse(row);
  if (done(row)) return row;
  throw new DomainError(`Policy '${id}' changed during the request; retry.`);
}

const refuseBuiltin = (row: PolicyRow) => {
  if (row.builtin)
    throw new DomainError(`'${row.name}' is a built-in policy: it can be enabled or disabled, not edited.`);
};

/** Replaces a custom policy (If-Match: `versions`); a built-in one is only switched on or off. */
export async function replacePolicy(
  db: Db,
  tenantId: string,
  id: string,
  request: PolicyChanges,
  versions?: number[],
): Promise<PolicyRow> {
  const changes = await checkedChanges(db, tenantId, request);
  const row = await replacePolicyRow(db, tenantId, id, changes, versions).catch(nameTaken('policy', changes.name));
  if (!row) return explainNoMatch(db, tenantId, id, versions, refuseBuiltin, () => false);
  await announce(db, 'policy.updated', row);
  return row;
}

/**
 * Approves a draft (again: unchanged). `approver` is who approves, `viaPat` whether through
 * a PAT, which then counts as the admin who issued it too: neither an admin's own PAT nor
 * a policy written through it gets round four eyes.
 */
export async function approvePolicy(
  db: Db,
  tenantId: string,
  id: string,
  approver: { name: string; viaPat: boolean },
  versions?: number[],
): Promise<PolicyRow> {
  const current = await findPolicy(db, tenantId, id);
  if (!current) throw new NotFoundError('policy', id);
  const identities = approver.viaPat ? await identitiesBehind(db, tenantId, approver.name) : [approver.name];
  if (versions && !versions.includes(current.row_version)) throw new StaleVersionError('policy', id);
  await refuseSelfApproval(db, tenantId, current, approver.name, identities);
  const row = await approvePolicyRow(db, tenantId, id, identities, versions);
  if (!row)
    return explainNoMatch(
      db,
      tenantId,
      id,
      versions,
      () => {},
      (r) => r.state === 'approved',
    );
  await announce(db, 'policy.approved', row);
  return row;
}

async function refuseSelfApproval(
  db: Db,
  tenantId: string,
  row: PolicyRow,
  approver: string,
  identities: string[],
): Promise<void> {
  const author = await identitiesBehind(db, tenantId, row.author);
  const shared = author.find((name) => identities.includes(name));
  if (!shared) return;
  throw new ForbiddenError(
    shared === row.author && shared === approver
      ? `'${approver}' wrote policy '${row.name}' and cannot approve it; another admin must.`
      : `'${approver}' cannot approve policy '${row.name}': it was written by '${row.author}' and both act for '${shared}'; another admin must.`,
  );
}

/** Switches a policy on or off (idempotent; its approval is unaffected). */
export async function switchPolicy(
  db: Db,
  tenantId: string,
  id: string,
  enabled: boolean,
  versions?: number[],
): Promise<PolicyRow> {
  const row = await setPolicyEnabled(db, tenantId, id, enabled, versions);
  if (!row)
    return explainNoMatch(
      db,
      tenantId,
      id,
      versions,
      () => {},
      (r) => r.enabled === enabled,
    );
  await announce(db, 'policy.updated', row);
  return row;
}
