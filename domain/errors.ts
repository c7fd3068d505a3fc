import { isUniqueViolation } from '../db/errors';

/**
 * What a domain rule refuses, in the domain's words. The api renders each as its RFC 9457
 * problem (api/problems.ts, `problemOf`); an activity turns them into non-retryable
 * failures, since retrying cannot change the answer.
 */
export class DomainError extends Error {
  override readonly name: string = 'DomainError';
}

/**
 * For `.catch(...)` on a write a unique index may refuse: a unique violation is `refusal` (a
 * name taken, a twin call first), anything else passes unchanged.
 */
export const refuseDuplicate =
  (refusal: () => DomainError) =>
  (error: unknown): never => {
    if (isUniqueViolation(error)) throw refusal();
    throw error;
  };

/** `refuseDuplicate` for a name unique among the tenant's `kind`s: "A policy named 'x' already exists." */
export const nameTaken = (kind: string, name: string) =>
  refuseDuplicate(() => new DomainError(`A ${kind} named '${name}' already exists.`));

/** An object that does not exist in the caller's tenant (another tenant's is the same). */
export class NotFoundError extends DomainError {
  override readonly name = 'NotFoundError';
  constructor(
    readonly kind: string,
    readonly id: string,
    detail = `No ${kind} with id '${id}'.`,
  ) {
    super(detail);
  }
}

export interface PolicyViolation {
  policyId: string;
  name: string;
  agentId: string;
  /** Set when the policy could not be evaluated (a CEL runtime error): that is a deny too. */
  error?: string;
}

/** Enforced policies denied a push: the first denial, and the denials listed (with their count when cut). */
export class PolicyDeniedError extends DomainError {
  override readonly name = 'PolicyDeniedError';
  constructor(
    detail: string,
    readonly facts: { policyId: string; agentId: string; violations: PolicyViolation[]; violationCount?: number },
  ) {
    super(detail);
  }
}

/** The configuration is synchronised from a Git source: it is changed in the repository, never here. */
export class ManagedByGitError extends DomainError {
  override readonly name = 'ManagedByGitError';
}

/** A version's content over the size limit (CONTENT_LIMIT_BYTES), measured in UTF-8 bytes. */
export class ContentTooLargeError extends DomainError {
  override readonly name = 'ContentTooLargeError';
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super(`${size} bytes of UTF-8; a configuration version holds at most ${limit} bytes (1 MiB)`);
  }
}

/** A version's content that does not parse in its configuration's format; the message says where and why. */
export class InvalidContentError extends DomainError {
  override readonly name = 'InvalidContentError';
}

/** The object's state does not allow the operation (a pending-only decision on another status). */
export class InvalidTransitionError extends DomainError {
  override readonly name = 'InvalidTransitionError';
}

/** The caller's If-Match names a version the object no longer has. */
export class StaleVersionError extends DomainError {
  override readonly name = 'StaleVersionError';
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`If-Match does not match the current ETag of ${kind} '${id}'.`);
  }
}

/** The caller may not do this, whatever its role allows (an author approving their own policy). */
export class ForbiddenError extends DomainError {
  override readonly name = 'ForbiddenError';
}

/** One member of the request is wrong in a way only the domain can tell (an expression that does not type-check). */
export class InvalidFieldError extends DomainError {
  override readonly name = 'InvalidFieldError';
  constructor(
    /** The member's name in the request body. */
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** One member of the request conflicts with what is stored (credentials that would follow a URL to another host). */
export class ConflictingFieldError extends DomainError {
  override readonly name = 'ConflictingFieldError';
  constructor(
    /** The member's name in the request body. */
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface FieldProblem {
  /** The member's path in the request body (`agentIds.3`). */
  field: string;
  message: string;
}

/** Several members of the request name what does not exist (ids of no agent): each with its problem. */
export class InvalidFieldsError extends DomainError {
  override readonly name = 'InvalidFieldsError';
  constructor(readonly fields: FieldProblem[]) {
    super(fields.map(({ field, message }) => `${field}: ${message}`).join('; '));
  }
}
