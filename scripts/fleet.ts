/**
 * Operator CLI: `npm run fleet -- <command>`. Talks straight to the database, so it works
 * before any token exists: the break-glass way to get the first admin token.
 */
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TENANT_ID } from '../api/auth/principal';
import { isRole, ROLES } from '../api/auth/roles';
import { agentCaCertificatePem, issueServerCertificate, loadAgentCa } from '../domain/certificates';
import { DomainError } from '../domain/errors';
import { issuePat } from '../domain/tokens/pats';
import { parseEndpoint } from '../api/http/endpoints';
import { loadSettingsOrExit } from '../platform/settings';
import { createDb, migrateLatest } from '../db/connection';
import { verifyAuditChain } from '../db/repos/audit';

const USAGE = `usage: npm run fleet -- <command>
  migrate                                   apply database migrations
  create-pat --name N --role R [--tenant T] [--expires-in-days D] [--allow "POST /api/x/{id}"]...
                                            issue a PAT and print it once (roles: ${ROLES.join(', ')})
  verify-audit [--tenant T]                 check the audit log's hash chain
  export-ca                                 print the agents' CA certificate (PEM), which agents and peers trust
  issue-proxy-certificate --hostname H... [--days D]
                                            print a certificate (with its chain) and its key, PEM, issued by the
                                            agents' CA for a proxy that ends agents' TLS (default 365 days)`;

class UsageError extends Error {}

/** A DNS name a certificate may carry: labels of letters, digits and inner hyphens; `*.` for a wildcard. */
const DNS_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

/** The checkout: this file runs from scripts/ (tsx) or, built, from dist/scripts/. */
const ROOT = path.resolve(__dirname, path.basename(path.dirname(__dirname)) === 'dist' ? '../..' : '..');

/** Next to a running `npm run dev`, the CLI uses its settings unless told otherwise. */
function withDevDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const devSettings = path.join(ROOT, '.dev-data', 'settings.json');
  if (env.FLEET_SETTINGS_FILE || env.Database__Url || !existsSync(devSettings)) return env;
  return { ...env, FLEET_SETTINGS_FILE: devSettings };
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command ? 0 : 64;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      role: { type: 'string' },
      tenant: { type: 'string', default: 'default' },
      'expires-in-days': { type: 'string' },
      allow: { type: 'string', multiple: true },
      hostname: { type: 'string', multiple: true },
      days: { type: 'string', default: '365' },
    },
    strict: true,
  });
  const settings = loadSettingsOrExit(withDevDefaults(process.env));
  const db = createDb(settings.database.url, 2);
  try {
    switch (command) {
      case 'migrate': {
        const applied = await migrateLatest(db);
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
        return 0;
      }
      case 'create-pat': {
        const { name, role, tenant } = values;
        if (!name || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name))
          throw new UsageError('--name is required: 1-100 of A-Z a-z 0-9 . _ -');
        if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
        if (!TENANT_ID.test(tenant)) throw new UsageError('--tenant must be lower-case letters, digits and dashes');
        const badEntry = values.allow?.find((entry) => !parseEndpoint(entry));
        if (badEntry) throw new UsageError(`--allow '${badEntry}' must look like "POST /api/rollouts/{id}/start"`);
        const days = values['expires-in-days'] === undefined ? undefined : Number(values['expires-in-days']);
        if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > 3650))
          throw new UsageError('--expires-in-days must be 1-3650');
        const request = {
          tenantId: tenant,
          name,
          role,
          allowedEndpoints: values.allow ?? null,
          expiresInDays: days,
          createdBy: 'cli',
        };
        const { row, token } = await db
          .transaction((trx) => issuePat(trx, request, settings.pat.defaultTtlDays))
          .catch((error: unknown) => {
            if (error instanceof DomainError) throw new UsageError(`${error.message} (tenant '${tenant}')`);
            throw error;
          });
        process.stderr.write(
          `PAT '${row.name}' (${row.role}, tenant ${tenant}, expires ${row.expires_at.toISOString()}). It is shown once:\n`,
        );
        process.stdout.write(`${token}\n`);
        return 0;
      }
      case 'verify-audit': {
        const verdict = await verifyAuditChain(db, values.tenant);
        process.stdout.write(`${JSON.stringify(verdict)}\n`);
        return verdict.valid ? 0 : 1;
      }
      case 'export-ca': {
        process.stdout.write(await agentCaCertificatePem(db, settings));
        return 0;
      }
      case 'issue-proxy-certificate': {
        const hostnames = values.hostname ?? [];
        if (hostnames.length === 0) throw new UsageError('issue-proxy-certificate needs --hostname (one per name)');
        const notAName = hostnames.find((name) => isIP(name) === 0 && !DNS_NAME.test(name));
        if (notAName !== undefined)
          throw new UsageError(`--hostname ${notAName} is neither a DNS name nor an IP address`);
        const days = Number(values.days);
        if (!Number.isInteger(days) || days < 1 || days > 825)
          throw new UsageError('--days must be a whole number of days from 1 to 825');
        const issued = await issueServerCertificate(await loadAgentCa(db, settings), hostnames, days);
        // HAProxy's `crt` takes the certificate, its chain and the key in one file.
        process.stdout.write(`${issued.certificatePem}${issued.keyPem}`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } finally {
    await db.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`fleet: ${(error as Error).message}\n${usage ? `${USAGE}\n` : ''}`);
    process.exit(usage ? 64 : 1);
  },
);
