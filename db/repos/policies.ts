import type { Knex } from 'knex';
import type { Db } from '../connection';
import { updateVersioned } from '../versioned';
import { findPatIssuer } from './pats';

export type PolicyState = 'draft' | 'approved';

export interface PolicyRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  expression: string;
  /** Group ids; empty: every group. */
  scope: string[];
  state: PolicyState;
  enabled: boolean;
  builtin: boolean;
  author: string;
  approver: string | null;
  approved_at: Date | null;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export type NewPolicy = Pick<
  PolicyRow,
  'tenant_id' | 'name' | 'description' | 'expression' | 'scope' | 'enabled' | 'author'
> &
  Partial<Pick<PolicyRow, 'state' | 'builtin' | 'approver' | 'approved_at'>>;

/** What PUT replaces; `enabled` is a switch, the others are what an approver reviewed. */
export type PolicyChanges = Pick<PolicyRow, 'name' | 'description' | 'expression' | 'scope' | 'enabled'>;

const toRow = (policy: NewPolicy) => ({ state: 'draft', ...policy, scope: JSON.stringify(policy.scope) });

export async function insertPolicy(db: Db, policy: NewPolicy): Promise<PolicyRow> {
  const [row] = await db<PolicyRow>('policies')
    .insert(toRow(policy) as never)
    .returning('*');
  return row!;
}

/** Inserts the policies whose names the tenant does not have yet; returns those inserted. */
export async function insertPoliciesIfAbsent(db: Db, policies: NewPolicy[]): Promise<PolicyRow[]> {
  if (policies.length === 0) return [];
  return db<PolicyRow>('policies')
    .insert(policies.map(toRow) as never)
    .onConflict(['tenant_id', 'name'])
    .ignore()
    .returning('*');
}

export async function findPolicy(db: Db, tenantId: string, id: string): Promise<PolicyRow | undefined> {
  return db<PolicyRow>('policies').where({ tenant_id: tenantId, id }).first();
}

export function listPoliciesQuery(
  db: Db,
  tenantId: string,
  filters: { state?: PolicyState; enabled?: boolean },
): Knex.QueryBuilder {
  const query = db('policies').select('*').where({ tenant_id: tenantId });
  if (filters.state) query.where({ state: filters.state });
  if (filters.enabled !== undefined) query.where({ enabled: filters.enabled });
  return query;
}

/** The policies that are enforced: approved and enabled. */
export async function enforcedPolicies(db: Db, tenantId: string): Promise<PolicyRow[]> {
  return db<PolicyRow>('policies')
    .where({ tenant_id: tenantId, state: 'approved', enabled: true })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

/** `updateVersioned` on a policy of the tenant. */
function updateWhere(
  db: Db,
  tenantId: string,
  id: string,
  versions: number[] | undefined,
  where: (query: Knex.QueryBuilder) => Knex.QueryBuilder,
  changes: Record<string, unknown>,
): Promise<PolicyRow | undefined> {
  return updateVersioned<PolicyRow>(db, 'policies', { tenant_id: tenantId, id }, versions, changes, where);
}

/**
 * Replaces a custom policy. When what an approver reviewed (name, description, expression,
 * scope) changes, an approved policy becomes a draft again and loses its approver; the
 * comparison is made in the UPDATE, against the row it writes.
 */
export async function replacePolicy(
  db: Db,
  tenantId: string,
  id: string,
  changes: PolicyChanges,
  versions?: number[],
): Promise<PolicyRow | undefined> {
  const scope = JSON.stringify(changes.scope);
  const reviewedChanged =
    '(name IS DISTINCT FROM ? OR description IS DISTINCT FROM ? OR expression IS DISTINCT FROM ? OR scope IS DISTINCT FROM ?::jsonb)';
  const bindings = [changes.name, changes.description, changes.expression, scope];
  const ifChanged = (then: string, otherwise: string) =>
    db.raw(`CASE WHEN ${reviewedChanged} THEN ${then} ELSE ${otherwise} END`, bindings);
  return updateWhere(db, tenantId, id, versions, (q) => q.where({ builtin: false }), {
    name: changes.name,
    description: changes.description,
    expression: changes.expression,
    scope,
    enabled: changes.enabled,
    state: ifChanged("'draft'", 'state'),
    approver: ifChanged('NULL', 'approver'),
    approved_at: ifChanged('NULL', 'approved_at'),
  });
}

/**
 * Approves a draft, unless its author is one of `approverIdentities` (the approver's name
 * and, for a PAT, the admin who issued it).
 */
export async function approvePolicy(
  db: Db,
  tenantId: string,
  id: string,
  approverIdentities: string[],
  versions?: number[],
) {
  return updateWhere(
    db,
    tenantId,
    id,
    versions,
    (q) => q.where({ state: 'draft' }).whereNotIn('author', approverIdentities),
    {
      state: 'approved',
      approver: approverIdentities[0],
      approved_at: db.fn.now(),
    },
  );
}

/**
 * Who stands behind a name in the tenant: the name itself and, when it is a PAT's name,
 * whoever issued that PAT. Four eyes means none of the author's and the approver's overlap.
 */
export async function identitiesBehind(db: Db, tenantId: string, name: string): Promise<string[]> {
  const pat = await findPatIssuer(db, tenantId, name);
  return pat && pat.created_by !== name ? [name, pat.created_by] : [name];
}

/** Switches a policy on or off; matches no row when it already is. */
export async function setPolicyEnabled(db: Db, tenantId: string, id: string, enabled: boolean, versions?: number[]) {
  return updateWhere(db, tenantId, id, versions, (q) => q.whereNot({ enabled }), { enabled });
}
